// Package mcpserver exposes a memory store to AI agents over the Model Context Protocol.
//
// The server offers five tools of its own, with JSON schemas:
//
//   - memory_search: hybrid/BM25/dense search with optional metadata and text filters;
//   - memory_add: add (or upsert) documents;
//   - memory_delete: delete documents by id;
//   - memory_get: fetch one document by id;
//   - sop_match: find the standard operating procedures whose triggers match a task;
//
// the tools of Chroma's MCP server, with their names and argument shapes (chroma_*: list,
// create, peek, count, delete collections; add, query with where, where_document and
// include and several query_texts, get and delete by ids and filters, update documents);
// the stored documents as resources (template memory://{collection}/{id}, listed a page
// at a time by resources/list); and the procedures of the SOP library as prompts, one
// message per step.
//
// [New] builds the server; run it over stdio with [ServeStdio] (or [StdioTransport]) or
// over streamable HTTP with [NewHTTPHandler], which can require a bearer token.
//
// Bad input is answered, never fatal: a malformed stdio frame gets a JSON-RPC error and
// the session goes on (see [StdioTransport]); frames and HTTP bodies are capped
// ([DefaultMaxFrameBytes]); each tool caps its arguments' bytes, documents, ids and query
// (Options), and a call over a cap is a tool error wrapping [ErrTooLarge].
package mcpserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/sop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Default caps of Options.
const (
	// defaultMaxArgBytes caps the JSON arguments of every tool but memory_add.
	defaultMaxArgBytes = 1 << 20
	// defaultMaxAddBytes caps the JSON arguments of memory_add.
	defaultMaxAddBytes = 4 << 20
	// defaultMaxAddDocs caps the documents of one memory_add.
	defaultMaxAddDocs = 256
	// defaultMaxDeleteIDs caps the ids of one memory_delete.
	defaultMaxDeleteIDs = 1024
	// defaultMaxQueryBytes caps the query of memory_search and sop_match.
	defaultMaxQueryBytes = 16 << 10
	// defaultMaxQueries caps the query_texts of one chroma_query_documents.
	defaultMaxQueries = 32
	// defaultMaxGetIDs caps the ids of one chroma_get_documents.
	defaultMaxGetIDs = 1024
	// defaultMaxGetLimit caps the documents one chroma_get_documents or
	// chroma_peek_collection returns.
	defaultMaxGetLimit = 1000
	// defaultMaxArgDepth caps the nesting of a call's JSON arguments: room for a filter at
	// memory.MaxFilterDepth ($and/$or lists nest two JSON levels each), refused by the
	// filter's own cap.
	defaultMaxArgDepth = 2*memory.MaxFilterDepth + 8
)

// Options configure [New]. The zero value is usable.
type Options struct {
	// Name and Version identify the server to clients (default "memory" and the module's
	// memory.Version).
	Name, Version string
	// Collection is the collection tools use when a call names none ("" = the store's
	// default collection).
	Collection string
	// SOPs is the procedure library of sop_match (nil: sop_match reports ErrNoSOPs).
	SOPs *sop.Library
	// ReadOnly leaves memory_add and memory_delete out.
	ReadOnly bool
	// DefaultTopK is memory_search's default (5); MaxTopK its bound (50).
	DefaultTopK, MaxTopK int
	// MaxAddDocs bounds the documents of one memory_add call (0: 256).
	MaxAddDocs int
	// MaxArgBytes caps the JSON arguments of a call of any tool but memory_add, checked
	// before they are decoded (0: 1 MiB).
	MaxArgBytes int
	// MaxAddBytes caps the JSON arguments of a memory_add call, checked before they are
	// decoded (0: 4 MiB). Keep it below the transport's frame cap
	// (DefaultMaxFrameBytes) so that a call over it gets a tool error naming it.
	MaxAddBytes int
	// MaxDeleteIDs caps the ids of one memory_delete call (0: 1,024).
	MaxDeleteIDs int
	// MaxQueryBytes caps the query of memory_search and sop_match, and each query text
	// of chroma_query_documents (0: 16 KiB).
	MaxQueryBytes int
	// MaxQueries caps the query_texts of one chroma_query_documents (0:
	// 32).
	MaxQueries int
	// MaxGetIDs caps the ids of one chroma_get_documents (0: 1,024); the ids
	// and the matches of chroma_delete_documents are capped by MaxDeleteIDs, the
	// documents of chroma_add_documents and chroma_update_documents by MaxAddDocs.
	MaxGetIDs int
	// MaxGetLimit caps the documents of one chroma_get_documents or chroma_peek_collection
	// (0: 1,000); a get without limit that matches more is refused.
	MaxGetLimit int
	// MaxArgDepth caps the nesting of a call's JSON arguments, checked before they are
	// decoded (0: twice memory's filter depth cap plus 8).
	MaxArgDepth int
	// ResourcePageSize is the number of documents of one resources/list page (0:
	// 100).
	ResourcePageSize int
	// Logger receives server logs (default slog.Default()).
	Logger *slog.Logger
	// SearchStats, when set, is called with the timings of each memory_search (see
	// memory.WithStatsFunc), from every call at once.
	SearchStats func(memory.SearchStats)
}

// ToolNames lists the memory tools New registers (memory_search, memory_add, memory_delete,
// memory_get, sop_match), for example as the labels of per-tool metrics.
func ToolNames() []string {
	return []string{toolSearch, toolAdd, toolDelete, toolGet, toolSOP}
}

// The memory tools' names.
const (
	toolSearch = "memory_search"
	toolAdd    = "memory_add"
	toolDelete = "memory_delete"
	toolGet    = "memory_get"
	toolSOP    = "sop_match"
)

// searchInput is memory_search's input.
type searchInput struct {
	Query      string       `json:"query" jsonschema:"what to search for, in natural language or keywords"`
	TopK       int          `json:"top_k,omitempty" jsonschema:"number of results to return (default 5)"`
	Collection string       `json:"collection,omitempty" jsonschema:"collection to search (default: the server's collection)"`
	Mode       string       `json:"mode,omitempty" jsonschema:"retrieval mode: hybrid (default), bm25 or dense"`
	Where      memory.Where `json:"where,omitempty" jsonschema:"metadata filter, e.g. {\"lang\": \"go\"} or {\"year\": {\"$gte\": 2020}}"`
	Rerank     bool         `json:"rerank,omitempty" jsonschema:"rerank the results with the server's cross-encoder, when it has one"`
	// WhereDocument filters on the text: {"$contains": "x"}, {"$not_contains": "x"}, $and, $or.
	WhereDocument memory.WhereDocument `json:"where_document,omitempty" jsonschema:"text filter, e.g. {\"$contains\": \"deploy\"}"`
	// Cascade searches collections in order and stops after the first whose best score
	// reaches CascadeThreshold (memory.WithCascade); not with Collection.
	Cascade          []string `json:"cascade,omitempty" jsonschema:"search these collections in order (a gold Q&A collection first, then knowledge collections) and stop after the first whose best score reaches cascade_threshold; each result names the collection that answered; not with collection"`
	CascadeThreshold float64  `json:"cascade_threshold,omitempty" jsonschema:"with cascade: the best score that stops it (default 0: the first collection with any result; compare with the scores a bm25, dense or reranked search gives)"`
	// DedupeSource keeps the best result of each source (memory.WithSourceDedup).
	DedupeSource bool `json:"dedupe_source,omitempty" jsonschema:"keep only the best result of each source (file or URL a document came from)"`
}

// searchResult is one result of memory_search: the JSON form of a memory.Result.
type searchResult struct {
	ID         string  `json:"id"`
	Collection string  `json:"collection"`
	Title      string  `json:"title,omitempty"`
	Text       string  `json:"text"`
	Score      float64 `json:"score"`
	// Relevance is the result's memory.Result.Relevance: 0..1 in every search mode, the
	// score to threshold (Score only ranks: RRF's, about 0.03, in a hybrid search).
	Relevance float64        `json:"relevance" jsonschema:"0..1 in every search mode (near 1: exact match, low: unrelated): the score to threshold; score only ranks"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	// Cascade is, in a cascade search, the 1-based step whose collection answered.
	Cascade int `json:"cascade,omitempty"`
}

// searchOutput is memory_search's output.
type searchOutput struct {
	Results []searchResult `json:"results"`
}

// documentInput is one document of memory_add.
type documentInput struct {
	ID       string         `json:"id" jsonschema:"unique id within the collection"`
	Title    string         `json:"title,omitempty" jsonschema:"optional title"`
	Text     string         `json:"text,omitempty" jsonschema:"the body; a document needs a title or a text"`
	Metadata map[string]any `json:"metadata,omitempty" jsonschema:"string, number or boolean values (or lists of them) to filter on"`
}

// addInput is memory_add's input.
type addInput struct {
	Documents  []documentInput `json:"documents" jsonschema:"documents to store"`
	Collection string          `json:"collection,omitempty" jsonschema:"collection to add to (default: the server's collection)"`
	Upsert     bool            `json:"upsert,omitempty" jsonschema:"replace documents whose id exists instead of failing"`
}

// addOutput is memory_add's output.
type addOutput struct {
	Stored     int    `json:"stored"`
	Collection string `json:"collection"`
}

// deleteInput is memory_delete's input.
type deleteInput struct {
	IDs        []string `json:"ids" jsonschema:"ids of the documents to delete; unknown ids are ignored"`
	Collection string   `json:"collection,omitempty" jsonschema:"collection to delete from (default: the server's collection)"`
}

// deleteOutput is memory_delete's output.
type deleteOutput struct {
	Deleted int `json:"deleted"`
}

// getInput is memory_get's input.
type getInput struct {
	ID         string `json:"id" jsonschema:"id of the document"`
	Collection string `json:"collection,omitempty" jsonschema:"collection to read (default: the server's collection)"`
}

// getOutput is memory_get's output.
type getOutput struct {
	ID         string         `json:"id"`
	Collection string         `json:"collection"`
	Title      string         `json:"title,omitempty"`
	Text       string         `json:"text"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// sopInput is sop_match's input.
type sopInput struct {
	Query    string `json:"query" jsonschema:"the task to find procedures for"`
	N        int    `json:"n,omitempty" jsonschema:"maximum number of procedures (default 3)"`
	Category string `json:"category,omitempty" jsonschema:"only procedures of this category"`
}

// sopMatch is one matched procedure.
type sopMatch struct {
	Name            string     `json:"name"`
	Description     string     `json:"description,omitempty"`
	Category        string     `json:"category,omitempty"`
	Priority        int        `json:"priority"`
	Score           float64    `json:"score"`
	MatchedTriggers []string   `json:"matched_triggers"`
	Steps           []sop.Step `json:"steps"`
	// Rendered is the procedure as prompt text.
	Rendered string `json:"rendered"`
}

// sopOutput is sop_match's output.
type sopOutput struct {
	Matches []sopMatch `json:"matches"`
}

type server struct {
	m *memory.Memory
	o Options
}

// New returns an MCP server exposing m.
func New(m *memory.Memory, opts Options) *mcp.Server {
	o := opts
	if o.Name == "" {
		o.Name = "memory"
	}
	if o.Version == "" {
		o.Version = memory.Version
	}
	if o.DefaultTopK <= 0 {
		o.DefaultTopK = 5
	}
	if o.MaxTopK <= 0 {
		o.MaxTopK = 50
	}
	for _, c := range []struct {
		v   *int
		def int
	}{{&o.MaxAddDocs, defaultMaxAddDocs}, {&o.MaxArgBytes, defaultMaxArgBytes}, {&o.MaxAddBytes, defaultMaxAddBytes},
		{&o.MaxDeleteIDs, defaultMaxDeleteIDs}, {&o.MaxQueryBytes, defaultMaxQueryBytes}, {&o.MaxQueries, defaultMaxQueries},
		{&o.MaxGetIDs, defaultMaxGetIDs}, {&o.MaxGetLimit, defaultMaxGetLimit}, {&o.MaxArgDepth, defaultMaxArgDepth},
		{&o.ResourcePageSize, defaultResourcePageSize}} {
		if *c.v <= 0 {
			*c.v = c.def
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &server{m: m, o: o}
	srv := mcp.NewServer(&mcp.Implementation{Name: o.Name, Version: o.Version}, &mcp.ServerOptions{Logger: o.Logger})
	srv.AddReceivingMiddleware(s.capArguments, s.listDocuments)
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(srv, &mcp.Tool{
		Name:        toolSearch,
		Description: "Search the long-term memory (hybrid BM25 + dense retrieval). Returns the best matching documents with their scores.",
		Annotations: readOnly,
	}, s.search)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        toolGet,
		Description: "Fetch one document of the long-term memory by id.",
		Annotations: readOnly,
	}, s.get)
	if !o.ReadOnly {
		mcp.AddTool(srv, &mcp.Tool{
			Name:        toolAdd,
			Description: "Store documents in the long-term memory. Set upsert to replace documents whose id exists.",
		}, s.add)
		destructive := true
		mcp.AddTool(srv, &mcp.Tool{
			Name:        toolDelete,
			Description: "Delete documents from the long-term memory by id.",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
		}, s.delete)
	}
	mcp.AddTool(srv, &mcp.Tool{
		Name:        toolSOP,
		Description: "Find the standard operating procedures (step-by-step instructions) that apply to a task.",
		Annotations: readOnly,
	}, s.sopMatch)
	s.addChromaTools(srv)
	s.addResources(srv)
	return srv
}

// listDocuments answers resources/list with the stored documents (listResources).
func (s *server) listDocuments(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.ListResourcesRequest); ok {
			cursor := ""
			if r.Params != nil {
				cursor = r.Params.Cursor
			}
			return s.listResources(ctx, cursor)
		}
		return next(ctx, method, req)
	}
}

// capArguments answers a tools/call whose arguments are over the tool's byte cap with a
// tool error, before the SDK decodes and validates them (which costs several times their
// size).
func (s *server) capArguments(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
			limit, name := s.o.MaxArgBytes, "MaxArgBytes"
			switch r.Params.Name {
			case toolAdd, toolChromaAddDocuments, toolChromaUpdateDocuments:
				limit, name = s.o.MaxAddBytes, "MaxAddBytes"
			}
			var err error
			if n := len(r.Params.Arguments); n > limit {
				err = fmt.Errorf("%w: %s arguments are %d bytes, over %d (%s)", ErrTooLarge, r.Params.Name, n, limit, name)
			} else if _, ok := jsonDepth(r.Params.Arguments, s.o.MaxArgDepth); !ok {
				err = fmt.Errorf("%w: %s arguments nest deeper than %d levels (MaxArgDepth)", ErrTooLarge, r.Params.Name, s.o.MaxArgDepth)
			}
			if err != nil {
				res := &mcp.CallToolResult{}
				res.SetError(err)
				return res, nil
			}
		}
		return next(ctx, method, req)
	}
}

// checkQuery checks a query argument: not blank, not over MaxQueryBytes.
func (s *server) checkQuery(q string) error {
	if len(q) > s.o.MaxQueryBytes {
		return fmt.Errorf("%w: query is %d bytes, over %d (MaxQueryBytes)", ErrTooLarge, len(q), s.o.MaxQueryBytes)
	}
	if strings.TrimSpace(q) == "" {
		return fmt.Errorf("%w: query is empty", ErrInvalidInput)
	}
	return nil
}

// collection returns the named collection, or the server's default one.
func (s *server) collection(name string) *memory.Collection {
	if name == "" {
		name = s.o.Collection
	}
	return s.m.Collection(name)
}

func (s *server) search(ctx context.Context, _ *mcp.CallToolRequest, in searchInput) (*mcp.CallToolResult, searchOutput, error) {
	if err := s.checkQuery(in.Query); err != nil {
		return nil, searchOutput{}, err
	}
	k := in.TopK
	if k == 0 {
		k = s.o.DefaultTopK
	}
	if k < 1 || k > s.o.MaxTopK {
		return nil, searchOutput{}, fmt.Errorf("%w: top_k %d not in [1, %d]", ErrInvalidInput, in.TopK, s.o.MaxTopK)
	}
	opts := []memory.SearchOption{memory.TopK(k)}
	switch memory.Mode(in.Mode) {
	case "":
	case memory.Hybrid, memory.BM25, memory.Dense:
		opts = append(opts, memory.WithMode(memory.Mode(in.Mode)))
	default:
		return nil, searchOutput{}, fmt.Errorf("%w: mode %q (want hybrid, bm25 or dense)", ErrInvalidInput, in.Mode)
	}
	if len(in.Where) > 0 {
		opts = append(opts, memory.WithWhere(in.Where))
	}
	if len(in.WhereDocument) > 0 {
		opts = append(opts, memory.WithWhereDocument(in.WhereDocument))
	}
	if in.Rerank {
		opts = append(opts, memory.WithRerank(0))
	}
	if in.DedupeSource {
		opts = append(opts, memory.WithSourceDedup())
	}
	if in.Cascade != nil {
		if in.Collection != "" {
			return nil, searchOutput{}, fmt.Errorf("%w: cascade and collection in one search", ErrInvalidInput)
		}
		opts = append(opts, memory.WithCascade(in.CascadeThreshold, in.Cascade...))
	} else if in.CascadeThreshold != 0 {
		return nil, searchOutput{}, fmt.Errorf("%w: cascade_threshold without cascade", ErrInvalidInput)
	}
	if s.o.SearchStats != nil {
		opts = append(opts, memory.WithStatsFunc(s.o.SearchStats))
	}
	res, err := s.collection(in.Collection).Search(ctx, in.Query, opts...)
	if err != nil {
		return nil, searchOutput{}, err
	}
	out := searchOutput{Results: make([]searchResult, len(res))}
	for i, r := range res {
		out.Results[i] = searchResult{ID: r.ID, Collection: r.Collection, Title: r.Title, Text: r.Text, Score: r.Score, Relevance: r.Relevance, Metadata: r.Metadata, Cascade: r.Explain.Cascade}
	}
	return nil, out, nil
}

func (s *server) add(ctx context.Context, _ *mcp.CallToolRequest, in addInput) (*mcp.CallToolResult, addOutput, error) {
	if len(in.Documents) == 0 {
		return nil, addOutput{}, fmt.Errorf("%w: no documents", ErrInvalidInput)
	}
	if len(in.Documents) > s.o.MaxAddDocs {
		return nil, addOutput{}, fmt.Errorf("%w: %d documents, at most %d per call (MaxAddDocs)", ErrTooLarge, len(in.Documents), s.o.MaxAddDocs)
	}
	docs := make([]memory.Document, len(in.Documents))
	for i, d := range in.Documents {
		docs[i] = memory.Document{ID: d.ID, Title: d.Title, Text: d.Text, Metadata: d.Metadata}
	}
	c := s.collection(in.Collection)
	var err error
	if in.Upsert {
		err = c.Upsert(ctx, docs...)
	} else {
		err = c.Add(ctx, docs...)
	}
	if err != nil {
		return nil, addOutput{}, err
	}
	return nil, addOutput{Stored: len(docs), Collection: c.Name()}, nil
}

func (s *server) delete(ctx context.Context, _ *mcp.CallToolRequest, in deleteInput) (*mcp.CallToolResult, deleteOutput, error) {
	if len(in.IDs) == 0 {
		return nil, deleteOutput{}, fmt.Errorf("%w: no ids", ErrInvalidInput)
	}
	if len(in.IDs) > s.o.MaxDeleteIDs {
		return nil, deleteOutput{}, fmt.Errorf("%w: %d ids, at most %d per call (MaxDeleteIDs)", ErrTooLarge, len(in.IDs), s.o.MaxDeleteIDs)
	}
	c := s.collection(in.Collection)
	before, err := c.Count(ctx)
	if err != nil && !errors.Is(err, memory.ErrCollectionNotFound) {
		return nil, deleteOutput{}, err
	}
	if err := c.Delete(ctx, in.IDs...); err != nil {
		return nil, deleteOutput{}, err
	}
	// Concurrent writers can skew the count; it is informative only.
	after, err := c.Count(ctx)
	if err != nil && !errors.Is(err, memory.ErrCollectionNotFound) {
		return nil, deleteOutput{}, err
	}
	return nil, deleteOutput{Deleted: max(0, before-after)}, nil
}

func (s *server) get(ctx context.Context, _ *mcp.CallToolRequest, in getInput) (*mcp.CallToolResult, getOutput, error) {
	if in.ID == "" {
		return nil, getOutput{}, fmt.Errorf("%w: id is empty", ErrInvalidInput)
	}
	c := s.collection(in.Collection)
	d, err := c.Get(ctx, in.ID)
	if err != nil {
		return nil, getOutput{}, err
	}
	return nil, getOutput{ID: d.ID, Collection: c.Name(), Title: d.Title, Text: d.Text, Metadata: d.Metadata}, nil
}

func (s *server) sopMatch(ctx context.Context, _ *mcp.CallToolRequest, in sopInput) (*mcp.CallToolResult, sopOutput, error) {
	if s.o.SOPs == nil {
		return nil, sopOutput{}, ErrNoSOPs
	}
	if err := s.checkQuery(in.Query); err != nil {
		return nil, sopOutput{}, err
	}
	n := in.N
	if n == 0 {
		n = 3
	}
	if n < 1 || n > 50 {
		return nil, sopOutput{}, fmt.Errorf("%w: n %d not in [1, 50]", ErrInvalidInput, in.N)
	}
	out := sopOutput{Matches: []sopMatch{}}
	for _, m := range s.o.SOPs.Match(in.Query, n, sop.MatchOptions{Category: in.Category}) {
		out.Matches = append(out.Matches, sopMatch{
			Name: m.SOP.Name, Description: m.SOP.Description, Category: m.SOP.Category,
			Priority: m.SOP.Priority, Score: m.Score, MatchedTriggers: append([]string{}, m.MatchedTriggers...),
			Steps: m.SOP.Steps, Rendered: sop.Render(m.SOP, sop.RenderContext{Query: in.Query}),
		})
	}
	return nil, out, nil
}

// ServeStdio serves srv over standard input and output until the client disconnects or
// ctx is cancelled, answering malformed frames with JSON-RPC errors ([StdioTransport]
// with its default caps).
func ServeStdio(ctx context.Context, srv *mcp.Server) error {
	err := srv.Run(ctx, &StdioTransport{Reader: io.NopCloser(os.Stdin), Writer: os.Stdout})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// HTTPOptions configure [NewHTTPHandler]. The zero value is usable.
type HTTPOptions struct {
	// Token, when not empty, is required as "Authorization: Bearer <token>".
	Token string
	// Logger receives the handler's logs (nil: slog.Default()).
	Logger *slog.Logger
	// MaxBodyBytes caps a request body; a body over it gets 413 before it is read
	// whole (0: DefaultMaxFrameBytes).
	MaxBodyBytes int64
	// MaxInFlightBytes is the budget of the POST requests being served at once: each
	// counts its body's length (MaxBodyBytes when unknown) and 64 KiB, and waits, its
	// body unread, while the budget is spent; a request alone always goes through
	// (0: 4 MiB).
	MaxInFlightBytes int64
	// MaxDepth caps the nesting of a POST body's JSON, as the stdio transport caps a
	// frame's: a deeper body gets a JSON-RPC error naming the cap (0: 128).
	MaxDepth int
}

// NewHTTPHandler serves srv over MCP's streamable HTTP with the caps and the token of o.
func NewHTTPHandler(srv *mcp.Server, o HTTPOptions) http.Handler {
	h, _ := newHTTPHandler(srv, o)
	return h
}

// newHTTPHandler is NewHTTPHandler, and the budget of its requests in flight.
func newHTTPHandler(srv *mcp.Server, o HTTPOptions) (http.Handler, *byteBudget) {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxFrameBytes
	}
	if o.MaxInFlightBytes <= 0 {
		o.MaxInFlightBytes = defaultMaxInFlightBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = defaultMaxFrameDepth
	}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Logger: o.Logger, MaxRequestBodyBytes: o.MaxBodyBytes})
	h = limitDepth(h, o.MaxDepth, o.MaxBodyBytes)
	budget := newByteBudget(o.MaxInFlightBytes)
	h = limitInFlight(h, budget, o.MaxBodyBytes)
	if o.Token == "" {
		return h, budget
	}
	return RequireBearer(o.Token, h), budget
}

// limitInFlight makes POST requests wait for their share of b (their body's length, or
// maxBody when unknown, plus callOverhead) before next reads them, so that concurrent
// clients cannot make the server hold more decoded requests than b allows.
func limitInFlight(next http.Handler, b *byteBudget, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		n := r.ContentLength
		if n < 0 || n > maxBody {
			n = maxBody
		}
		n += callOverhead
		if !b.acquire(n, r.Context().Done()) {
			return // the client went away
		}
		defer b.release(n)
		next.ServeHTTP(w, r)
	})
}

// limitDepth answers a POST body nested deeper than maxDepth with a JSON-RPC error
// naming the cap, as the stdio transport answers such a frame, before the SDK decodes it;
// it runs inside limitInFlight, whose budget counts the body it reads. A body over maxBody
// goes on to the SDK's handler, which answers 413.
func limitDepth(next http.Handler, maxDepth int, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if int64(len(body)) > maxBody {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
			next.ServeHTTP(w, r)
			return
		}
		if _, ok := jsonDepth(body, maxDepth); !ok {
			fe := depthError(body, maxDepth, "MaxDepth")
			// 200 with the error as the call's response, which clients report as such.
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(append(fe.response(), '\n'))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// RequireBearer lets through only requests carrying "Authorization: Bearer <token>",
// compared in constant time; others get 401 with a WWW-Authenticate header.
func RequireBearer(token string, next http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="memory"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"unauthorized"}` + "\n"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
