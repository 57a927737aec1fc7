// Package mcpserver exposes a memory store to AI agents over the Model Context Protocol.
//
// The server offers five tools with JSON schemas:
//
//   - memory_search: hybrid/BM25/dense search with an optional metadata filter;
//   - memory_add: add (or upsert) documents;
//   - memory_delete: delete documents by id;
//   - memory_get: fetch one document by id;
//   - sop_match: find the standard operating procedures whose triggers match a task.
//
// [New] builds the server; run it over stdio with [ServeStdio] or over streamable HTTP
// with [NewHTTPHandler], which can require a bearer token.
package mcpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/sop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Errors of the tools; they reach the client as tool errors (isError) naming the bad value.
var (
	// ErrInvalidInput: a tool argument is missing or out of range.
	ErrInvalidInput = errors.New("mcpserver: invalid input")
	// ErrNoSOPs: sop_match was called on a server started without a procedure library.
	ErrNoSOPs = errors.New("mcpserver: no SOP library loaded")
)

// Options configure [New]. The zero value is usable.
type Options struct {
	// Name and Version identify the server to clients (default "memory", "v0").
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
	// MaxAddDocs bounds the documents of one memory_add call (default 256).
	MaxAddDocs int
	// Logger receives server logs (default slog.Default()).
	Logger *slog.Logger
}

// Tool names.
const (
	ToolSearch = "memory_search"
	ToolAdd    = "memory_add"
	ToolDelete = "memory_delete"
	ToolGet    = "memory_get"
	ToolSOP    = "sop_match"
)

// SearchInput is memory_search's input.
type SearchInput struct {
	Query      string       `json:"query" jsonschema:"what to search for, in natural language or keywords"`
	TopK       int          `json:"top_k,omitempty" jsonschema:"number of results to return (default 5)"`
	Collection string       `json:"collection,omitempty" jsonschema:"collection to search (default: the server's collection)"`
	Mode       string       `json:"mode,omitempty" jsonschema:"retrieval mode: hybrid (default), bm25 or dense"`
	Where      memory.Where `json:"where,omitempty" jsonschema:"metadata filter, e.g. {\"lang\": \"go\"} or {\"year\": {\"$gte\": 2020}}"`
	Rerank     bool         `json:"rerank,omitempty" jsonschema:"rerank the results with the server's cross-encoder, when it has one"`
}

// SearchResult is one result of memory_search: the JSON form of a memory.Result.
type SearchResult struct {
	ID         string         `json:"id"`
	Collection string         `json:"collection"`
	Title      string         `json:"title,omitempty"`
	Text       string         `json:"text"`
	Score      float64        `json:"score"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// SearchOutput is memory_search's output.
type SearchOutput struct {
	Results []SearchResult `json:"results"`
}

// DocumentInput is one document of memory_add.
type DocumentInput struct {
	ID       string         `json:"id" jsonschema:"unique id within the collection"`
	Title    string         `json:"title,omitempty" jsonschema:"optional title"`
	Text     string         `json:"text,omitempty" jsonschema:"the body; a document needs a title or a text"`
	Metadata map[string]any `json:"metadata,omitempty" jsonschema:"string, number or boolean values to filter on"`
}

// AddInput is memory_add's input.
type AddInput struct {
	Documents  []DocumentInput `json:"documents" jsonschema:"documents to store"`
	Collection string          `json:"collection,omitempty" jsonschema:"collection to add to (default: the server's collection)"`
	Upsert     bool            `json:"upsert,omitempty" jsonschema:"replace documents whose id exists instead of failing"`
}

// AddOutput is memory_add's output.
type AddOutput struct {
	Stored     int    `json:"stored"`
	Collection string `json:"collection"`
}

// DeleteInput is memory_delete's input.
type DeleteInput struct {
	IDs        []string `json:"ids" jsonschema:"ids of the documents to delete; unknown ids are ignored"`
	Collection string   `json:"collection,omitempty" jsonschema:"collection to delete from (default: the server's collection)"`
}

// DeleteOutput is memory_delete's output.
type DeleteOutput struct {
	Deleted int `json:"deleted"`
}

// GetInput is memory_get's input.
type GetInput struct {
	ID         string `json:"id" jsonschema:"id of the document"`
	Collection string `json:"collection,omitempty" jsonschema:"collection to read (default: the server's collection)"`
}

// GetOutput is memory_get's output.
type GetOutput struct {
	ID         string         `json:"id"`
	Collection string         `json:"collection"`
	Title      string         `json:"title,omitempty"`
	Text       string         `json:"text"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// SOPInput is sop_match's input.
type SOPInput struct {
	Query    string `json:"query" jsonschema:"the task to find procedures for"`
	N        int    `json:"n,omitempty" jsonschema:"maximum number of procedures (default 3)"`
	Category string `json:"category,omitempty" jsonschema:"only procedures of this category"`
}

// SOPMatch is one matched procedure.
type SOPMatch struct {
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

// SOPOutput is sop_match's output.
type SOPOutput struct {
	Matches []SOPMatch `json:"matches"`
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
		o.Version = "v0"
	}
	if o.DefaultTopK <= 0 {
		o.DefaultTopK = 5
	}
	if o.MaxTopK <= 0 {
		o.MaxTopK = 50
	}
	if o.MaxAddDocs <= 0 {
		o.MaxAddDocs = 256
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &server{m: m, o: o}
	srv := mcp.NewServer(&mcp.Implementation{Name: o.Name, Version: o.Version}, &mcp.ServerOptions{Logger: o.Logger})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolSearch,
		Description: "Search the long-term memory (hybrid BM25 + dense retrieval). Returns the best matching documents with their scores.",
		Annotations: readOnly,
	}, s.search)
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolGet,
		Description: "Fetch one document of the long-term memory by id.",
		Annotations: readOnly,
	}, s.get)
	if !o.ReadOnly {
		mcp.AddTool(srv, &mcp.Tool{
			Name:        ToolAdd,
			Description: "Store documents in the long-term memory. Set upsert to replace documents whose id exists.",
		}, s.add)
		destructive := true
		mcp.AddTool(srv, &mcp.Tool{
			Name:        ToolDelete,
			Description: "Delete documents from the long-term memory by id.",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
		}, s.delete)
	}
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolSOP,
		Description: "Find the standard operating procedures (step-by-step instructions) that apply to a task.",
		Annotations: readOnly,
	}, s.sopMatch)
	return srv
}

// collection returns the named collection, or the server's default one.
func (s *server) collection(name string) *memory.Collection {
	if name == "" {
		name = s.o.Collection
	}
	return s.m.Collection(name)
}

func (s *server) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	if strings.TrimSpace(in.Query) == "" {
		return nil, SearchOutput{}, fmt.Errorf("%w: query is empty", ErrInvalidInput)
	}
	k := in.TopK
	if k == 0 {
		k = s.o.DefaultTopK
	}
	if k < 1 || k > s.o.MaxTopK {
		return nil, SearchOutput{}, fmt.Errorf("%w: top_k %d not in [1, %d]", ErrInvalidInput, in.TopK, s.o.MaxTopK)
	}
	opts := []memory.SearchOption{memory.TopK(k)}
	switch memory.Mode(in.Mode) {
	case "":
	case memory.Hybrid, memory.BM25, memory.Dense:
		opts = append(opts, memory.WithMode(memory.Mode(in.Mode)))
	default:
		return nil, SearchOutput{}, fmt.Errorf("%w: mode %q (want hybrid, bm25 or dense)", ErrInvalidInput, in.Mode)
	}
	if len(in.Where) > 0 {
		opts = append(opts, memory.WithWhere(in.Where))
	}
	if in.Rerank {
		opts = append(opts, memory.WithRerank(0))
	}
	res, err := s.collection(in.Collection).Search(ctx, in.Query, opts...)
	if err != nil {
		return nil, SearchOutput{}, err
	}
	out := SearchOutput{Results: make([]SearchResult, len(res))}
	for i, r := range res {
		out.Results[i] = SearchResult{ID: r.ID, Collection: r.Collection, Title: r.Title, Text: r.Text, Score: r.Score, Metadata: r.Metadata}
	}
	return nil, out, nil
}

func (s *server) add(ctx context.Context, _ *mcp.CallToolRequest, in AddInput) (*mcp.CallToolResult, AddOutput, error) {
	if len(in.Documents) == 0 {
		return nil, AddOutput{}, fmt.Errorf("%w: no documents", ErrInvalidInput)
	}
	if len(in.Documents) > s.o.MaxAddDocs {
		return nil, AddOutput{}, fmt.Errorf("%w: %d documents, at most %d per call", ErrInvalidInput, len(in.Documents), s.o.MaxAddDocs)
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
		return nil, AddOutput{}, err
	}
	return nil, AddOutput{Stored: len(docs), Collection: c.Name()}, nil
}

func (s *server) delete(ctx context.Context, _ *mcp.CallToolRequest, in DeleteInput) (*mcp.CallToolResult, DeleteOutput, error) {
	if len(in.IDs) == 0 {
		return nil, DeleteOutput{}, fmt.Errorf("%w: no ids", ErrInvalidInput)
	}
	c := s.collection(in.Collection)
	before := c.Count()
	if err := c.Delete(ctx, in.IDs...); err != nil {
		return nil, DeleteOutput{}, err
	}
	// Concurrent writers can skew the count; it is informative only.
	return nil, DeleteOutput{Deleted: max(0, before-c.Count())}, nil
}

func (s *server) get(ctx context.Context, _ *mcp.CallToolRequest, in GetInput) (*mcp.CallToolResult, GetOutput, error) {
	if in.ID == "" {
		return nil, GetOutput{}, fmt.Errorf("%w: id is empty", ErrInvalidInput)
	}
	c := s.collection(in.Collection)
	d, err := c.Get(ctx, in.ID)
	if err != nil {
		return nil, GetOutput{}, err
	}
	return nil, GetOutput{ID: d.ID, Collection: c.Name(), Title: d.Title, Text: d.Text, Metadata: d.Metadata}, nil
}

func (s *server) sopMatch(ctx context.Context, _ *mcp.CallToolRequest, in SOPInput) (*mcp.CallToolResult, SOPOutput, error) {
	if s.o.SOPs == nil {
		return nil, SOPOutput{}, ErrNoSOPs
	}
	if strings.TrimSpace(in.Query) == "" {
		return nil, SOPOutput{}, fmt.Errorf("%w: query is empty", ErrInvalidInput)
	}
	n := in.N
	if n == 0 {
		n = 3
	}
	if n < 1 || n > 50 {
		return nil, SOPOutput{}, fmt.Errorf("%w: n %d not in [1, 50]", ErrInvalidInput, in.N)
	}
	out := SOPOutput{Matches: []SOPMatch{}}
	for _, m := range s.o.SOPs.Match(in.Query, n, sop.MatchOptions{Category: in.Category}) {
		out.Matches = append(out.Matches, SOPMatch{
			Name: m.SOP.Name, Description: m.SOP.Description, Category: m.SOP.Category,
			Priority: m.SOP.Priority, Score: m.Score, MatchedTriggers: append([]string{}, m.MatchedTriggers...),
			Steps: m.SOP.Steps, Rendered: sop.Render(m.SOP, sop.RenderContext{Query: in.Query}),
		})
	}
	return nil, out, nil
}

// ServeStdio serves srv over standard input and output until the client disconnects or
// ctx is cancelled.
func ServeStdio(ctx context.Context, srv *mcp.Server) error {
	err := srv.Run(ctx, &mcp.StdioTransport{})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// NewHTTPHandler serves srv over MCP streamable HTTP. A non-empty token is required as
// "Authorization: Bearer <token>" on every request (401 otherwise).
func NewHTTPHandler(srv *mcp.Server, token string, logger *slog.Logger) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Logger: logger})
	if token == "" {
		return h
	}
	return RequireBearer(token, h)
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
