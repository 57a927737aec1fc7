package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/metrics"
	"github.com/agentmem/memory/mcpserver"
	"github.com/agentmem/memory/searchr1"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// errNotReady: the served collection's indexes are still being opened and caught up.
var errNotReady = errors.New("not ready")

// serveOps is what every listener of `memory serve` serves beside its protocol: /metrics
// (a Prometheus registry of its own per listener), /health, /ready and, with --pprof,
// /debug/pprof/.
type serveOps struct {
	m          *memory.Memory
	collection string
	pprof      bool
	logger     *slog.Logger

	mcpReg     *prometheus.Registry // the MCP listener's
	mcpMetrics *metrics.MCP

	mu      sync.Mutex
	warmed  bool  // the served collection's indexes were opened and caught up
	warmErr error // why they could not be
}

// newServeOps starts opening and catching up the indexes of collection in the background
// (a BM25 search opens every index of the collection; on a big store that reads the
// change log since the indexes were last saved), so that /ready turns 200 once they
// can answer, not at the first client's search.
func newServeOps(ctx context.Context, m *memory.Memory, collection string, pprofOn bool, logger *slog.Logger) *serveOps {
	o := &serveOps{m: m, collection: collection, pprof: pprofOn, logger: logger}
	o.mcpReg = o.registry()
	o.mcpMetrics, _ = metrics.NewMCP(o.mcpReg) // a new registry: nothing to collide with
	go func() {
		_, err := m.Collection(collection).Search(ctx, "ready", memory.WithMode(memory.BM25), memory.TopK(1))
		o.mu.Lock()
		defer o.mu.Unlock()
		o.warmed, o.warmErr = err == nil, err
		if err != nil && ctx.Err() == nil {
			logger.Error("memory serve: opening the indexes", "collection", collection, "err", err)
		}
	}()
	return o
}

// ready reports nil when the store is open and the served collection's indexes are open
// and caught up; else why not.
func (o *serveOps) ready(ctx context.Context) error {
	o.mu.Lock()
	warmed, warmErr := o.warmed, o.warmErr
	o.mu.Unlock()
	switch {
	case warmErr != nil:
		return fmt.Errorf("opening the indexes of collection %q: %w", o.collection, warmErr)
	case !warmed:
		return fmt.Errorf("%w: opening and catching up the indexes of collection %q", errNotReady, o.collection)
	}
	if _, err := o.m.Collection(o.collection).Count(ctx); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	return nil
}

// mux serves /metrics of reg and, with --pprof, /debug/pprof/ (less cmdline, which would
// show --token) beside next. With token, pprof needs the bearer token too.
func (o *serveOps) mux(reg *prometheus.Registry, token string, next http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler(reg))
	if o.pprof {
		guard := func(h http.Handler) http.Handler {
			if token == "" {
				return h
			}
			return mcpserver.RequireBearer(token, h)
		}
		handleProfiler(mux, guard)
	}
	mux.Handle("/", next)
	return mux
}

// registry is a listener's registry: the Go runtime, the process and the store's size.
func (o *serveOps) registry() *prometheus.Registry {
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewStoreCollector(o.m))
	return reg
}

// retrieveOptions sets the Observer (metrics in a new registry, returned) and Ready of
// the /retrieve server's options.
func (o *serveOps) retrieveOptions(ropts *searchr1.RetrieveOptions) (*prometheus.Registry, error) {
	reg := o.registry()
	obs, err := metrics.NewRetrieve(reg)
	if err != nil {
		return nil, err
	}
	ropts.Observer = obs
	ropts.Ready = o.ready
	return reg, nil
}

// mcpOptions adds the MCP listener's search timings to opts.
func (o *serveOps) mcpOptions(opts mcpserver.Options) mcpserver.Options {
	opts.SearchStats = o.mcpMetrics.Search
	return opts
}

// mcpHandler serves /health, /ready, /metrics and pprof beside the MCP handler h of s,
// whose calls it counts. /health, /ready and /metrics need no token (probes and scrapers
// carry none); they tell nothing of the store's contents.
func (o *serveOps) mcpHandler(s *mcp.Server, token string, h http.Handler) (http.Handler, error) {
	reg, mm := o.mcpReg, o.mcpMetrics
	s.AddReceivingMiddleware(mm.Middleware(mcpserver.ToolNames()))
	mux := o.mux(reg, token, mm.InstrumentHTTP(h))
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		opsJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		if err := o.ready(r.Context()); err != nil {
			w.Header().Set("Retry-After", "1")
			opsJSON(w, r, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "detail": err.Error()})
			return
		}
		opsJSON(w, r, http.StatusOK, map[string]string{"status": "ready"})
	})
	return mux, nil
}

// opsJSON answers GET or HEAD with v, anything else with 405.
func opsJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		status, v = http.StatusMethodNotAllowed, map[string]string{"detail": "method " + r.Method + " not allowed"}
	}
	data, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
