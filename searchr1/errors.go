package searchr1

import (
	"errors"

	"github.com/agentmem/memory/internal/errkind"
)

// Errors of the loop and its options.
var (
	// ErrInvalidOption: a Loop, Runner or server option is out of range or missing (no
	// generator, no searcher for a search, an unknown compat dialect); the message names it.
	ErrInvalidOption = errors.New("searchr1: invalid option")
)

// Errors of the questions.
var (
	// ErrEmptyQuestion: a question is blank (only whitespace, as Python's str.isspace sees
	// it), so it cannot be prepared as the original prepares questions ([PrepareQuestion]).
	ErrEmptyQuestion = errors.New("searchr1: empty question")
)

// Errors of the generators.
var (
	// ErrScriptExhausted: a Scripted generator was asked for more outputs than it holds.
	ErrScriptExhausted = errors.New("searchr1: scripted generator exhausted")
	// ErrHTTPStatus: the model server answered with an error status (after retries).
	ErrHTTPStatus = errors.New("searchr1: model server error status")
	// ErrBadResponse: the model server's answer could not be read.
	ErrBadResponse = errors.New("searchr1: bad model server response")
)

// Errors of the retrieval server, each answered with its HTTP status and a message
// naming the field or the limit; a request body's problem is a [RequestError] that
// matches one of them.
var (
	// ErrInvalidRequest: a request body is malformed JSON, not an object, or has a field
	// missing, of the wrong type or out of range (400 for malformed JSON in the native
	// dialect, else 422).
	ErrInvalidRequest = errors.New("searchr1: invalid request")
	// ErrBodyTooLarge: a request body is over MaxBodyBytes (MaxRerankBodyBytes for
	// /rerank); answered 413.
	ErrBodyTooLarge = errors.New("searchr1: request body too large")
	// ErrTooManyQueries: a request holds more queries than MaxQueries.
	ErrTooManyQueries = errors.New("searchr1: too many queries")
	// ErrQueryTooLong: a query is longer than MaxQueryBytes.
	ErrQueryTooLong = errors.New("searchr1: query over the per-query byte cap")
	// ErrOverBudget: queries x topk x MaxPassageBytes is over MaxResponseBytes.
	ErrOverBudget = errors.New("searchr1: request over the response budget")
	// ErrNoReranker: /rerank, or a retrieve-and-rerank request of the [CompatSearchR1]
	// dialect, was sent to a server without a reranker.
	ErrNoReranker = errors.New("searchr1: no reranker configured")
)

// Errors of a Runner.
var (
	// ErrAllEpisodesFailed: every episode of a run failed (each failure is in its
	// trajectory's error field); the error wraps the first failure.
	ErrAllEpisodesFailed = errors.New("searchr1: every episode failed")
	// ErrWriteTrajectory: a trajectory could not be written; the run stops.
	ErrWriteTrajectory = errors.New("searchr1: write trajectory")
)

// Private kinds: their own text, matching ErrInvalidOption under errors.Is.
var (
	errNoGenerator   = errkind.New("searchr1: no generator", ErrInvalidOption)
	errNoSearcher    = errkind.New("searchr1: no searcher", ErrInvalidOption)
	errUnknownCompat = errkind.New("searchr1: unknown compat dialect", ErrInvalidOption)
)
