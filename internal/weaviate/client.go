// Package weaviate is a small typed client for Weaviate's REST and GraphQL API (issue #41):
// the groundwork for running the memory API on a Weaviate cluster. It speaks plain net/http
// to several nodes, fails over to the next node on connection errors and timeouts, bounds
// every attempt with a timeout, retries a bounded number of times with backoff, and maps
// Weaviate's answers to the sentinel errors below (use errors.Is).
//
// Objects carry our string id as the property "docId"; the Weaviate UUID is derived from it
// with UUIDv5 (see UUID), so a retried write is an idempotent upsert.
package weaviate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentmem/memory/internal/httpretry"
)

// Sentinel errors. Every error this package returns for a request wraps exactly one of them
// (or a context error when the caller's context ends).
var (
	// ErrUnavailable: no node answered usefully (connection refused or reset, 5xx, a shard or
	// replica that could not be reached) within the attempts allowed.
	ErrUnavailable = errors.New("weaviate: unavailable")
	// ErrConsistency: Weaviate refused the request because the consistency level asked for
	// (e.g. ALL with a replica down) could not be achieved.
	ErrConsistency = errors.New("weaviate: consistency level not achieved")
	// ErrNotFound: the class or object does not exist (HTTP 404).
	ErrNotFound = errors.New("weaviate: not found")
	// ErrInvalid: Weaviate rejected the request (HTTP 400 or 422, a GraphQL validation error),
	// or the request could not be built; the error carries Weaviate's message.
	ErrInvalid = errors.New("weaviate: invalid request")
	// ErrTimeout: an attempt ran past Config.Timeout, or the caller's context deadline passed
	// (then the error also wraps context.DeadlineExceeded).
	ErrTimeout = errors.New("weaviate: timeout")
)

// Consistency is a Weaviate replication consistency level.
type Consistency string

// The consistency levels. The zero value sends none, and Weaviate then uses its default
// (QUORUM).
const (
	One    Consistency = "ONE"
	Quorum Consistency = "QUORUM"
	All    Consistency = "ALL"
)

func (c Consistency) valid() bool { return c == "" || c == One || c == Quorum || c == All }

// Caps on what is read from a response.
const (
	// DefaultMaxBody is the default cap on a response body (Config.MaxBody).
	DefaultMaxBody = 32 << 20
	// MaxMessage is the most bytes of a server message kept in an error.
	MaxMessage = 512
)

// Config configures a Client. Only Endpoints is required.
type Config struct {
	// Endpoints are the nodes' base URLs ("http://127.0.0.2:8080") or host:port pairs; see
	// ParseEndpoints for the cluster script's endpoint line.
	Endpoints []string
	// HTTPClient sends the requests (default: a client of its own, no overall timeout).
	HTTPClient *http.Client
	// Timeout bounds each attempt (default 15 s). Weaviate can hold a request for minutes
	// after its Raft leader dies (docs/weaviate.md), so it must be finite.
	Timeout time.Duration
	// MaxAttempts is the number of attempts of one call over all nodes (default 6).
	MaxAttempts int
	// Backoff is the wait between attempts (default 100 ms doubling to 2 s, with jitter).
	// The first retry after a failed node goes to the next node at once when there is one
	// the call has not tried yet.
	Backoff httpretry.Backoff
	// MaxBody caps a response body (default DefaultMaxBody); a larger body is an error.
	MaxBody int64
}

// Client talks to one Weaviate cluster. It is safe for concurrent use.
type Client struct {
	nodes   []string
	hc      *http.Client
	timeout time.Duration
	tries   int
	backoff httpretry.Backoff
	maxBody int64
	next    atomic.Uint32 // the node to try first: the last one that answered
}

// New returns a Client for cfg's endpoints.
func New(_ context.Context, cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: no endpoints", ErrInvalid)
	}
	c := &Client{hc: cfg.HTTPClient, timeout: cfg.Timeout, tries: cfg.MaxAttempts, backoff: cfg.Backoff, maxBody: cfg.MaxBody}
	for _, e := range cfg.Endpoints {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if !strings.Contains(e, "://") {
			e = "http://" + e
		}
		u, err := url.Parse(e)
		if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("%w: endpoint %q", ErrInvalid, e)
		}
		c.nodes = append(c.nodes, strings.TrimRight(e, "/"))
	}
	if len(c.nodes) == 0 {
		return nil, fmt.Errorf("%w: no endpoints", ErrInvalid)
	}
	if c.hc == nil {
		c.hc = &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	if c.timeout <= 0 {
		c.timeout = 15 * time.Second
	}
	if c.tries <= 0 {
		c.tries = 6
	}
	if c.backoff == (httpretry.Backoff{}) {
		c.backoff = httpretry.Backoff{Base: 100 * time.Millisecond, Max: 2 * time.Second, MaxRetryAfter: 5 * time.Second}
	}
	if c.maxBody <= 0 {
		c.maxBody = DefaultMaxBody
	}
	return c, nil
}

// ParseEndpoints reads the endpoint line of scripts/weaviate-cluster.sh
// ("weaviate://127.0.0.2:8080,127.0.0.3:8080 grpc://...") or a plain comma-separated list of
// host:port pairs or URLs, and returns the HTTP base URLs. gRPC addresses are skipped.
func ParseEndpoints(line string) []string {
	var out []string
	for _, field := range strings.Fields(line) {
		switch {
		case strings.HasPrefix(field, "grpc://"):
			continue
		case strings.HasPrefix(field, "weaviate://"):
			field = strings.TrimPrefix(field, "weaviate://")
		}
		for _, h := range strings.Split(field, ",") {
			if h = strings.TrimSpace(h); h == "" {
				continue
			}
			if !strings.Contains(h, "://") {
				h = "http://" + h
			}
			out = append(out, h)
		}
	}
	return out
}

// Endpoints returns the nodes' base URLs in the order they are tried.
func (c *Client) Endpoints() []string { return append([]string(nil), c.nodes...) }

// Error is the error of a request. errors.Is matches Kind (one of the sentinels) and
// errors.As the cause, when there is one.
type Error struct {
	Op     string // what was asked, e.g. "batch put", "GET /v1/objects/..."
	Node   string // the node that answered last, or that failed last
	Status int    // the HTTP status, 0 when there was no answer
	Msg    string // Weaviate's message (at most MaxMessage bytes) or the transport error
	Tries  int    // attempts made
	Kind   error  // ErrUnavailable, ErrConsistency, ErrNotFound, ErrInvalid or ErrTimeout
	Cause  error  // the transport or context error, if any

	retryAfter time.Duration // the server's Retry-After, if any
}

// Error returns "weaviate: <kind>: <op> on <node> (HTTP n, k tries): message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind.Error())
	b.WriteString(": ")
	b.WriteString(e.Op)
	if e.Node != "" {
		b.WriteString(" on ")
		b.WriteString(e.Node)
	}
	var paren []string
	if e.Status != 0 {
		paren = append(paren, fmt.Sprintf("HTTP %d", e.Status))
	}
	if e.Tries > 1 {
		paren = append(paren, fmt.Sprintf("%d tries", e.Tries))
	}
	if len(paren) > 0 {
		b.WriteString(" (" + strings.Join(paren, ", ") + ")")
	}
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	return b.String()
}

// Unwrap returns Kind and, when set, Cause.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

// capMsg trims s to MaxMessage bytes (on a rune boundary).
func capMsg(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= MaxMessage {
		return s
	}
	cut := MaxMessage
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// request is one logical call: method, path (with query), JSON body.
type request struct {
	op     string
	method string
	path   string
	body   []byte
	// accept maps an answer to the call's result: nil when it is a success, else an *Error
	// (retry says whether another attempt may help). It reads the capped body.
	accept func(status int, body []byte, attempt int) (err *Error, retry bool)
	// tries, when > 0, caps the attempts of this call below Config.MaxAttempts.
	tries int
}

// do runs r with failover, per-attempt timeouts, and bounded retries with backoff.
func (c *Client) do(ctx context.Context, r request) error {
	if r.accept == nil {
		r.accept = acceptREST
	}
	start := int(c.next.Load()) % len(c.nodes)
	tries := c.tries
	if r.tries > 0 {
		tries = min(tries, r.tries)
	}
	var last *Error
	for attempt := 1; attempt <= tries; attempt++ {
		if attempt > 1 {
			// The first pass over the nodes fails over at once; later passes wait.
			if attempt > len(c.nodes) || last.Kind == ErrConsistency || last.retryAfter > 0 {
				if err := httpretry.Sleep(ctx, c.backoff.Wait(attempt-1, last.retryAfter), last); err != nil {
					return c.ctxError(ctx, r.op, last, attempt-1)
				}
			}
		}
		node := c.nodes[(start+attempt-1)%len(c.nodes)]
		e, retry := c.attempt(ctx, node, r, attempt)
		if e == nil {
			c.next.Store(uint32((start + attempt - 1) % len(c.nodes)))
			return nil
		}
		e.Node, e.Tries = node, attempt
		if e.Op == "" {
			e.Op = r.op
		}
		last = e
		if ctx.Err() != nil {
			return c.ctxError(ctx, r.op, last, attempt)
		}
		if !retry {
			return e
		}
	}
	return last
}

// ctxError is the error when the caller's context ended during a call.
func (c *Client) ctxError(ctx context.Context, op string, last *Error, tries int) error {
	e := &Error{Op: op, Tries: tries, Kind: ErrUnavailable, Cause: ctx.Err()}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		e.Kind = ErrTimeout
	}
	if last != nil {
		e.Node, e.Status, e.Msg = last.Node, last.Status, last.Msg
	}
	return e
}

// attempt sends r to node once.
func (c *Client) attempt(ctx context.Context, node string, r request, attempt int) (*Error, bool) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(actx, r.method, node+r.path, body)
	if err != nil {
		return &Error{Kind: ErrInvalid, Msg: capMsg(err.Error()), Cause: err}, false
	}
	req.Header.Set("Accept", "application/json")
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(ctx, actx, err), true
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		e := c.transportError(ctx, actx, err)
		e.Status = resp.StatusCode
		return e, true
	}
	if int64(len(data)) > c.maxBody {
		return &Error{Status: resp.StatusCode, Kind: ErrInvalid, Msg: fmt.Sprintf("response body over %d bytes", c.maxBody)}, false
	}
	e, retry := r.accept(resp.StatusCode, data, attempt)
	if e != nil {
		e.Status = resp.StatusCode
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			e.retryAfter = httpretry.RetryAfter(resp.Header.Get("Retry-After"))
		}
	}
	return e, retry
}

// transportError maps an error without an answer: the attempt's own timeout is ErrTimeout,
// anything else ErrUnavailable.
func (c *Client) transportError(ctx, actx context.Context, err error) *Error {
	e := &Error{Kind: ErrUnavailable, Msg: capMsg(err.Error()), Cause: err}
	if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		e.Kind = ErrTimeout
		e.Msg = fmt.Sprintf("no answer within %s", c.timeout)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
		e.Kind = ErrTimeout
	}
	return e
}

// restError is Weaviate's REST error body: {"error":[{"message":"..."}]}.
type restError struct {
	Error []struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"` // some handlers (e.g. 422 from go-swagger) answer {"code":..,"message":..}
}

// messageOf extracts the server's message from an error body, else the body itself.
func messageOf(body []byte) string {
	var re restError
	if json.Unmarshal(body, &re) == nil {
		var parts []string
		for _, m := range re.Error {
			if m.Message != "" {
				parts = append(parts, m.Message)
			}
		}
		if re.Message != "" {
			parts = append(parts, re.Message)
		}
		if len(parts) > 0 {
			return capMsg(strings.Join(parts, "; "))
		}
	}
	return capMsg(string(body))
}

// acceptREST maps a REST status: 2xx success; 404 ErrNotFound; 400/422 ErrInvalid; a
// consistency message ErrConsistency (retried: the gossip membership may drop a dead node);
// 429 and 5xx ErrUnavailable (retried); anything else ErrInvalid.
func acceptREST(status int, body []byte, _ int) (*Error, bool) {
	if status >= 200 && status < 300 {
		return nil, false
	}
	msg := messageOf(body)
	switch {
	case status == http.StatusNotFound:
		return &Error{Kind: ErrNotFound, Msg: msg}, false
	case isConsistencyMsg(msg):
		return &Error{Kind: ErrConsistency, Msg: msg}, true
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		return &Error{Kind: ErrInvalid, Msg: msg}, false
	case status == http.StatusTooManyRequests || status >= 500:
		return &Error{Kind: ErrUnavailable, Msg: msg}, true
	default:
		return &Error{Kind: ErrInvalid, Msg: msg}, false
	}
}

// isConsistencyMsg recognises Weaviate's refusals of a consistency level: "cannot achieve
// consistency level" (reads, usecases/replica) and "cannot reach enough replicas" (writes:
// the coordinator's broadcast found fewer live replicas than the level needs).
func isConsistencyMsg(msg string) bool {
	low := strings.ToLower(msg)
	return strings.Contains(low, "consistency level") || strings.Contains(low, "enough replicas")
}

// isUnknownClassMsg recognises GraphQL's answer for a class its schema does not hold:
// `Cannot query field "C" on type "GetObjectsObj"` (or AggregateObjectsObj).
func isUnknownClassMsg(msg string) bool {
	return strings.Contains(msg, "Cannot query field") &&
		(strings.Contains(msg, `on type "GetObjectsObj"`) || strings.Contains(msg, `on type "AggregateObjectsObj"`))
}

// unavailableWords mark a GraphQL or per-object error that another node or a later attempt
// may not have.
var unavailableWords = []string{
	"connection refused", "connection reset", "context deadline exceeded", "deadline exceeded",
	"unavailable", "timeout", "timed out", "no such host", "broken pipe", "eof", "leader",
	"not ready", "shutting down", "read error", "write error", "broadcast", "replica",
}

// kindOfMessage classifies an error message found in a 200 answer (GraphQL errors, per-object
// batch errors).
func kindOfMessage(msg string) (kind error, retry bool) {
	low := strings.ToLower(msg)
	if isConsistencyMsg(low) {
		return ErrConsistency, true
	}
	if isUnknownClassMsg(msg) {
		// A class just created may not be in a node's GraphQL schema yet: another node or
		// a later attempt may know it.
		return ErrNotFound, true
	}
	for _, w := range unavailableWords {
		if strings.Contains(low, w) {
			return ErrUnavailable, true
		}
	}
	if strings.Contains(low, "not found") || strings.Contains(low, "does not exist") || strings.Contains(low, "no such class") {
		return ErrNotFound, false
	}
	return ErrInvalid, false
}

// decode unmarshals a success body into v, mapping a malformed body to ErrUnavailable (a node
// answering garbage; another may not).
func decode(body []byte, v any) (*Error, bool) {
	if err := json.Unmarshal(body, v); err != nil {
		return &Error{Kind: ErrUnavailable, Msg: capMsg("malformed response: " + err.Error()), Cause: err}, true
	}
	return nil, false
}

// withConsistency appends ?consistency_level= to path when cl is set.
func withConsistency(path string, cl Consistency) string {
	if cl == "" {
		return path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + "consistency_level=" + string(cl)
}

func invalid(op, format string, args ...any) error {
	return &Error{Op: op, Kind: ErrInvalid, Msg: capMsg(fmt.Sprintf(format, args...))}
}

// Ready reports whether at least one node answers GET /v1/.well-known/ready with 2xx
// (through the same failover and retries as every call).
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, request{op: "ready", method: http.MethodGet, path: "/v1/.well-known/ready"})
}
