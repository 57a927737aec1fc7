// Package webui serves a small, read-only web page over an open store: its collections
// and their documents, a search box whose results show how each was scored at every stage
// (BM25, dense recall, fusion, rerank), and the metrics of evaluation runs as charts.
//
// The page is one HTML file with a little vanilla JavaScript and CSS, embedded in the
// binary: it loads nothing from anywhere else. It reads JSON from endpoints under /api/:
//
//	GET /api/info                                    the store: version, reranker, caps
//	GET /api/collections                             collections with their document counts
//	GET /api/documents?collection=C&after=ID&limit=N a page of documents, in id order
//	GET /api/search?collection=C&q=Q&mode=M&k=K&rerank=1
//	                                                 results, each with its explanation
//	GET /api/reports                                 the eval reports of Options.EvalReports
//
// Bad input gets an HTTP 4xx answer whose JSON body names what is wrong:
// {"error": "...", "param": "k"}. Nothing the handler serves writes to the store.
//
// Eval reports are JSON files written by WriteEvalReport (`memory eval --report-out`).
package webui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentmem/memory"
)

var (
	// ErrInvalidOption reports bad Options given to New (a nil store, a negative cap, an
	// eval report that cannot be read); the error names the option.
	ErrInvalidOption = errors.New("webui: invalid option")
	// ErrInvalidReport reports an eval report that is not one: malformed JSON, another
	// format, a metric out of range, too large a file. The error names the file and what
	// is wrong.
	ErrInvalidReport = errors.New("webui: invalid eval report")
)

// Defaults of Options.
const (
	// DefaultMaxK is the most results a search may ask for.
	DefaultMaxK = 100
	// DefaultPageSize is the number of documents of a page when a request names none.
	DefaultPageSize = 20
	// DefaultMaxPageSize is the most documents a page may ask for.
	DefaultMaxPageSize = 100
	// MaxQueryBytes is the longest query the search endpoint takes.
	MaxQueryBytes = 4096
	// MaxTextBytes is the most bytes of a document's or result's text an answer carries;
	// a longer text is cut (on a UTF-8 boundary) and marked as cut.
	MaxTextBytes = 2000
)

// maxCap bounds Options.MaxK and MaxPageSize: one answer holds at most this many
// results or documents.
const maxCap = 10_000

// Options configures the page. The zero value serves with the defaults and no eval reports.
type Options struct {
	// EvalReports are paths of JSON files written by WriteEvalReport, shown as charts.
	// Each is read by New (a bad one is ErrInvalidOption wrapping ErrInvalidReport) and
	// again on each request, so a report rewritten by a later eval run is shown as it is.
	EvalReports []string
	// Logger receives the server errors (nil: slog.Default()).
	Logger *slog.Logger
	// MaxK is the most results a search may ask for (0: DefaultMaxK; at most 10,000).
	MaxK int
	// PageSize is the number of documents per page when a request names none
	// (0: DefaultPageSize); at most MaxPageSize.
	PageSize int
	// MaxPageSize is the most documents one page may ask for (0: DefaultMaxPageSize; at
	// most 10,000).
	MaxPageSize int
}

// normalise checks o and fills in its defaults.
func (o *Options) normalise() error {
	for _, c := range []struct {
		name string
		v    int
	}{{"MaxK", o.MaxK}, {"PageSize", o.PageSize}, {"MaxPageSize", o.MaxPageSize}} {
		if c.v < 0 {
			return fmt.Errorf("%w: %s %d: must not be negative", ErrInvalidOption, c.name, c.v)
		}
	}
	if o.MaxK > maxCap || o.MaxPageSize > maxCap {
		return fmt.Errorf("%w: MaxK %d or MaxPageSize %d is over %d", ErrInvalidOption, o.MaxK, o.MaxPageSize, maxCap)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxK == 0 {
		o.MaxK = DefaultMaxK
	}
	if o.MaxPageSize == 0 {
		o.MaxPageSize = DefaultMaxPageSize
	}
	if o.PageSize == 0 {
		o.PageSize = min(DefaultPageSize, o.MaxPageSize)
	}
	if o.PageSize > o.MaxPageSize {
		return fmt.Errorf("%w: PageSize %d is over MaxPageSize %d", ErrInvalidOption, o.PageSize, o.MaxPageSize)
	}
	seen := make(map[string]bool, len(o.EvalReports))
	for i, p := range o.EvalReports {
		if p == "" {
			return fmt.Errorf("%w: EvalReports[%d] is an empty path", ErrInvalidOption, i)
		}
		if seen[p] {
			return fmt.Errorf("%w: EvalReports names %s twice", ErrInvalidOption, p)
		}
		seen[p] = true
		if _, err := ReadEvalReport(p); err != nil {
			return fmt.Errorf("%w: EvalReports[%d]: %w", ErrInvalidOption, i, err)
		}
	}
	return nil
}

//go:embed static
var staticFiles embed.FS

// server is the handler New returns.
type server struct {
	m        *memory.Memory
	o        Options
	reranker bool // the store has a reranker (see hasReranker)
	mux      *http.ServeMux
}

// New returns the handler of the page over m, which stays open while it serves (the
// caller closes it). The handler serves the page at "/" and its files and JSON under
// "static/" and "api/", with relative links: it may be mounted under a prefix with
// http.StripPrefix. Bad options are ErrInvalidOption.
func New(m *memory.Memory, opts Options) (http.Handler, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: nil *memory.Memory", ErrInvalidOption)
	}
	opts.EvalReports = append([]string(nil), opts.EvalReports...)
	if err := opts.normalise(); err != nil {
		return nil, err
	}
	s := &server{m: m, o: opts, reranker: hasReranker(m), mux: http.NewServeMux()}
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("/static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	s.mux.Handle("/api/info", s.api(s.info))
	s.mux.Handle("/api/collections", s.api(s.collections))
	s.mux.Handle("/api/documents", s.api(s.documents))
	s.mux.Handle("/api/search", s.api(s.search))
	s.mux.Handle("/api/reports", s.api(s.reports))
	s.mux.Handle("/api/", s.api(func(r *http.Request) (any, error) {
		return nil, notFound("path", "no API endpoint %s", r.URL.Path)
	}))
	return s, nil
}

// contentSecurity lets the page load its own files only: no inline script, no other
// origin. The page never puts stored text into HTML, and this is a second wall.
const contentSecurity = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// ServeHTTP serves the page, its files and its API, with headers that keep the browser
// from running anything the page did not ship.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurity)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

// rerankProbe is a collection name that no collection can have (it holds a control
// character): a search of it fails before it reads anything.
const rerankProbe = "webui\x00probe"

// hasReranker reports whether m has a reranker: a search that asks to rerank fails with
// memory.ErrNoReranker, before anything is read, when it has none; with one, the probe's
// invalid collection name fails the search next, still before anything is read.
func hasReranker(m *memory.Memory) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := m.Collection(rerankProbe).Search(ctx, "probe", memory.WithMode(memory.BM25), memory.WithRerank(1), memory.TopK(1))
	return err == nil || errors.Is(err, memory.ErrInvalidCollection) || errors.Is(err, memory.ErrCollectionNotFound)
}
