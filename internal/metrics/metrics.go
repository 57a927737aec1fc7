// Package metrics exports the measurements of memory's servers to Prometheus: the
// Search-R1 retrieval server of package searchr1 ([Retrieve], its searchr1.Observer), the
// MCP server over HTTP ([MCP]) and the store itself ([NewStoreCollector]). Each server
// registers into a registry of its own ([NewRegistry]), never the global one, so that
// tests and several servers in one process do not collide; [Handler] serves a registry
// in Prometheus' text format.
//
// The metric names, all prefixed memory_:
//
//	retrieve_requests_total{endpoint,code}              requests answered
//	retrieve_errors_total{endpoint,kind}                failed requests by kind (searchr1.Kind*)
//	retrieve_request_duration_seconds{endpoint}         histogram, arrival to last byte
//	retrieve_batch_queries{endpoint}                    histogram: queries per request
//	retrieve_queries_total{endpoint}                    queries received in accepted requests
//	retrieve_queue_wait_seconds{endpoint}               histogram: wait for a request slot
//	retrieve_stage_duration_seconds{endpoint,stage}     histogram: search, rerank, write
//	retrieve_in_flight                                  requests being served
//	search_stage_duration_seconds{mode,stage}           histogram per search: filter, bm25,
//	                                                    embed, dense, fuse, rerank, total
//	mcp_http_requests_total{method,code}                MCP HTTP requests
//	mcp_http_request_duration_seconds{method}           histogram
//	mcp_calls_total{method,tool,outcome}                JSON-RPC calls (outcome ok, error, tool_error)
//	mcp_call_duration_seconds{method,tool}              histogram
//	search_stage_duration_seconds{mode,stage}           as above, of memory_search calls
//	store_documents{collection}                         documents stored
//	store_disk_bytes                                    bytes of the store's folder on disk
//
// with the Go runtime's and the process's own (go_*, process_*).
package metrics

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/searchr1"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a registry of its own holding the Go runtime's and the process's
// collectors.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves the metrics of reg in Prometheus' text format (GET /metrics); failures
// to gather are counted in reg too (promhttp_metric_handler_errors_total).
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

var (
	// latencyBuckets span 50 µs to about 26 s.
	latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 20)
	// batchBuckets span 1 to 8,192 queries (searchr1.DefaultMaxQueries).
	batchBuckets = prometheus.ExponentialBuckets(1, 2, 14)
)

// Retrieve holds the metrics of a retrieval server; it is a searchr1.Observer (give it
// as RetrieveOptions.Observer). Safe for concurrent use.
type Retrieve struct {
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	batch    *prometheus.HistogramVec
	queries  *prometheus.CounterVec
	queue    *prometheus.HistogramVec
	stage    *prometheus.HistogramVec
	inFlight prometheus.Gauge
	search   *prometheus.HistogramVec
}

var _ searchr1.Observer = (*Retrieve)(nil)

// NewRetrieve registers the metrics of a retrieval server in reg.
func NewRetrieve(reg prometheus.Registerer) (*Retrieve, error) {
	r := &Retrieve{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memory_retrieve_requests_total",
			Help: "Requests answered by the retrieval server, by endpoint and HTTP status."}, []string{"endpoint", "code"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memory_retrieve_errors_total",
			Help: "Failed requests of the retrieval server, by endpoint and kind of failure."}, []string{"endpoint", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "memory_retrieve_request_duration_seconds",
			Help: "Time from a request's arrival to its end.", Buckets: latencyBuckets}, []string{"endpoint"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "memory_retrieve_batch_queries",
			Help: "Queries per accepted /retrieve or /rerank request.", Buckets: batchBuckets}, []string{"endpoint"}),
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memory_retrieve_queries_total",
			Help: "Queries of the accepted /retrieve and /rerank requests."}, []string{"endpoint"}),
		queue: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "memory_retrieve_queue_wait_seconds",
			Help: "Time a request waited for a slot (--max-concurrent).", Buckets: latencyBuckets}, []string{"endpoint"}),
		stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "memory_retrieve_stage_duration_seconds",
			Help:    "Time of a request's stages: search (per chunk of queries), rerank (per query), write (per request).",
			Buckets: latencyBuckets}, []string{"endpoint", "stage"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "memory_retrieve_in_flight",
			Help: "Requests being served by the retrieval server."}),
		search: newSearchStages(),
	}
	for _, c := range []prometheus.Collector{r.requests, r.errors, r.duration, r.batch, r.queries, r.queue, r.stage, r.inFlight, r.search} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func newSearchStages() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "memory_search_stage_duration_seconds",
		Help:    "Time of each stage of a search of the store (the stages the search ran; total for every search).",
		Buckets: latencyBuckets}, []string{"mode", "stage"})
}

// Request implements searchr1.Observer.
func (r *Retrieve) Request(endpoint string, status int, kind string, d time.Duration) {
	r.requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
	if kind != "" {
		r.errors.WithLabelValues(endpoint, kind).Inc()
	}
	r.duration.WithLabelValues(endpoint).Observe(d.Seconds())
	r.inFlight.Dec()
}

// Batch implements searchr1.Observer.
func (r *Retrieve) Batch(endpoint string, queries int) {
	r.batch.WithLabelValues(endpoint).Observe(float64(queries))
	r.queries.WithLabelValues(endpoint).Add(float64(queries))
}

// Queue implements searchr1.Observer.
func (r *Retrieve) Queue(endpoint string, wait time.Duration) {
	r.queue.WithLabelValues(endpoint).Observe(wait.Seconds())
}

// Stage implements searchr1.Observer.
func (r *Retrieve) Stage(endpoint, stage string, d time.Duration) {
	r.stage.WithLabelValues(endpoint, stage).Observe(d.Seconds())
}

// Search implements searchr1.Observer.
func (r *Retrieve) Search(st memory.SearchStats) { observeSearch(r.search, st) }

// Begin implements searchr1.Observer.
func (r *Retrieve) Begin(string) { r.inFlight.Inc() }

// observeSearch records the stages st ran.
func observeSearch(h *prometheus.HistogramVec, st memory.SearchStats) {
	mode := string(st.Mode)
	if mode == "" {
		mode = "unknown" // refused before its mode was resolved
	}
	obs := func(stage string, d time.Duration) { h.WithLabelValues(mode, stage).Observe(d.Seconds()) }
	if st.Allowed >= 0 && st.Filter > 0 {
		obs("filter", st.Filter)
	}
	if st.Mode != memory.Dense {
		obs("bm25", st.BM25)
	}
	if st.Mode != memory.BM25 {
		obs("embed", st.Embed)
		obs("dense", st.Dense)
	}
	if st.Mode == memory.Hybrid {
		obs("fuse", st.Fuse)
	}
	if st.Rerank > 0 {
		obs("rerank", st.Rerank)
	}
	obs("total", st.Total)
}

// MCP holds the metrics of an MCP server over HTTP. Safe for concurrent use.
type MCP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	calls    *prometheus.CounterVec
	callDur  *prometheus.HistogramVec
	search   *prometheus.HistogramVec
}

// NewMCP registers the metrics of an MCP server in reg.
func NewMCP(reg prometheus.Registerer) (*MCP, error) {
	m := &MCP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memory_mcp_http_requests_total",
			Help: "HTTP requests of the MCP listener, by method and status."}, []string{"method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "memory_mcp_http_request_duration_seconds",
			Help: "Time of an HTTP request of the MCP listener (an event stream counts until it closes).", Buckets: latencyBuckets}, []string{"method"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "memory_mcp_calls_total",
			Help: "JSON-RPC calls the MCP server answered, by method, tool (tools/call) and outcome (ok, error, tool_error)."}, []string{"method", "tool", "outcome"}),
		callDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "memory_mcp_call_duration_seconds",
			Help: "Time the MCP server took to answer a call.", Buckets: latencyBuckets}, []string{"method", "tool"}),
		search: newSearchStages(),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.calls, m.callDur, m.search} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Search records the timings of a memory_search (give it as mcpserver.Options.SearchStats).
func (m *MCP) Search(st memory.SearchStats) { observeSearch(m.search, st) }

// InstrumentHTTP counts and times the requests next serves.
func (m *MCP) InstrumentHTTP(next http.Handler) http.Handler {
	return promhttp.InstrumentHandlerDuration(m.duration, promhttp.InstrumentHandlerCounter(m.requests, next))
}

// knownMethods bounds the method label to MCP's methods (a client may send any string).
var knownMethods = map[string]bool{
	"initialize": true, "ping": true, "tools/list": true, "tools/call": true, "prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/read": true, "resources/templates/list": true, "completion/complete": true,
	"logging/setLevel": true, "resources/subscribe": true, "resources/unsubscribe": true,
	"notifications/initialized": true, "notifications/cancelled": true, "notifications/progress": true,
	"notifications/roots/list_changed": true,
}

// Middleware counts and times the calls an mcp.Server receives (add it with
// AddReceivingMiddleware).
func (m *MCP) Middleware(tools []string) mcp.Middleware {
	known := map[string]bool{}
	for _, t := range tools {
		known[t] = true
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			start := time.Now()
			res, err := next(ctx, method, req)
			tool := ""
			if c, ok := req.(*mcp.CallToolRequest); ok && c.Params != nil {
				tool = "other"
				if known[c.Params.Name] {
					tool = c.Params.Name
				}
			}
			if !knownMethods[method] {
				method = "other"
			}
			outcome := "ok"
			if err != nil {
				outcome = "error"
			} else if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
				outcome = "tool_error"
			}
			m.calls.WithLabelValues(method, tool, outcome).Inc()
			m.callDur.WithLabelValues(method, tool).Observe(time.Since(start).Seconds())
			return res, err
		}
	}
}

// storeCollector reports a store's size when scraped.
type storeCollector struct {
	m     *memory.Memory
	docs  *prometheus.Desc
	bytes *prometheus.Desc

	mu       sync.Mutex
	diskAt   time.Time
	diskSize int64
}

// diskCacheFor bounds how often the store's folder is walked: a scrape within it reuses
// the last size.
const diskCacheFor = 10 * time.Second

// NewStoreCollector reports the documents of each collection of m and the bytes of its
// folder on disk (walked at most every 10 s) when scraped.
func NewStoreCollector(m *memory.Memory) prometheus.Collector {
	return &storeCollector{m: m,
		docs:  prometheus.NewDesc("memory_store_documents", "Documents stored, by collection.", []string{"collection"}, nil),
		bytes: prometheus.NewDesc("memory_store_disk_bytes", "Bytes of the store's folder on disk (store of record and indexes).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.docs
	ch <- c.bytes
}

// Collect implements prometheus.Collector.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx := context.Background()
	names, err := c.m.Collections(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.docs, err)
		return
	}
	for _, name := range names {
		n, err := c.m.Collection(name).Count(ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.docs, err)
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.docs, prometheus.GaugeValue, float64(n), name)
	}
	dir := c.m.Dir()
	if dir == "" {
		return
	}
	size, err := c.diskBytes(dir)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.bytes, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(size))
}

// diskBytes is the size of the files under dir, walked at most every diskCacheFor.
func (c *storeCollector) diskBytes(dir string) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.diskAt.IsZero() && time.Since(c.diskAt) < diskCacheFor {
		return c.diskSize, nil
	}
	var size int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking (an index segment merged away)
			}
			return err
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	c.diskAt, c.diskSize = time.Now(), size
	return size, nil
}
