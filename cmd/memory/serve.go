package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentmem/memory/webui"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/mcpserver"
	"github.com/agentmem/memory/searchr1"
	"github.com/agentmem/memory/sop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newServeCmd() *cobra.Command {
	var cfg serveConfig
	var c *cobra.Command
	c = newCommand("serve", "serve a store: Search-R1 /retrieve over HTTP, MCP over stdio or HTTP",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			if err := cfg.settle(args, c.Flags().Changed("rerank-depth")); err != nil {
				return err
			}
			return serveStore(ctx, cfg, stdout, stderr)
		})
	cfg.addFlags(c.Flags())
	return c
}

// serveStdin is the MCP stdio input (a variable so tests can feed it).
var serveStdin io.Reader = os.Stdin

// shutdownTimeout bounds the graceful shutdown of the HTTP servers.
const shutdownTimeout = 10 * time.Second

// serveConfig holds the parsed flags of `memory serve`.
type serveConfig struct {
	store        storeFlags
	collection   string
	retrieveAddr string
	mode         string
	compatName   string // --compat as given
	compat       searchr1.Compat
	retrieve     searchr1.RetrieveOptions // the /retrieve limits given on the command line
	idleTimeout  time.Duration
	mcpStdio     bool
	mcpHTTP      string
	token        string
	sopDir       string
	readOnly     bool
	maxFrame     int  // MCP: cap on one stdio frame or HTTP body
	pprof        bool // serve /debug/pprof/ on every listener
	uiAddr       string
	uiReports    []string // --ui-report files (webui.WriteEvalReport's)
}

func serveStore(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// The reranker is loaded here, once, so /retrieve and /rerank can use it as well as
	// the store's own searches.
	var extra []memory.Option
	if cfg.store.reranker != "" {
		r, err := loadReranker(cfg.store.reranker, string(cfg.store.device))
		if err != nil {
			return err
		}
		if c, ok := r.(io.Closer); ok {
			defer c.Close()
		}
		cfg.retrieve.Reranker = r
		extra = append(extra, memory.WithReranker(r))
		cfg.store.reranker = ""
	}
	if cfg.readOnly || (!cfg.mcpStdio && cfg.mcpHTTP == "") { // (--ui only reads)
		// Nothing it serves writes: open the store read-only, so that several servers
		// (and CLI searches) share it.
		extra = append(extra, memory.ReadOnly())
	}
	if cfg.compat == searchr1.CompatSearchR1 && cfg.store.scoring == "" {
		if isClusterStore(cfg.store.dir) {
			// Weaviate scores BM25 itself: the scores are its own, not pyserini's.
			if memory.Mode(cfg.mode) != memory.Dense {
				fmt.Fprintln(stderr, "memory serve: warning: --compat search-r1 on a Weaviate cluster: BM25 scores are Weaviate's (its word tokenizer, BM25 per shard), not pyserini's")
			}
		} else {
			// The original's BM25 retriever is pyserini's: Lucene's formula, unless
			// --bm25-scoring asks for another.
			extra = append(extra, memory.WithBM25Scoring(memory.ScoringLucene))
		}
	}
	m, err := cfg.store.open(cfg.store.dir, stderr, extra...)
	if err != nil {
		return err
	}
	defer m.Close()
	if id, dim, ok := m.StoredEmbedder(); ok && cfg.mode == "" && !hasQueryModel(m) {
		// As `search` does: without --mode, a store whose model cannot be loaded (vectors
		// imported without it, or a model gone) serves BM25 rather than failing every query.
		fmt.Fprintf(stderr, "memory serve: warning: /retrieve serves BM25 only: the store's vectors come from %q (dim %d), which is not loaded (give --embedder or put the model in $MEMORY_MODELS)\n", id, dim)
		cfg.mode = string(memory.BM25)
	}
	// A mistyped --collection fails here, naming the collections there are, rather than
	// serving an empty one.
	searcher, err := openCollection(m, cfg.collection)
	if err != nil {
		return err
	}
	// Its indexes open now rather than on the first request (at 21M passages ~13 ms); an
	// error is the first search's to report (it opens them again).
	if err := searcher.Open(ctx); err != nil && !errors.Is(err, memory.ErrCollectionNotFound) {
		fmt.Fprintf(stderr, "memory serve: warning: opening the indexes of the collection: %v\n", err)
	}
	if cfg.compat == searchr1.CompatSearchR1 && cfg.mode == "" {
		// The original serves one retriever: dense (e5) when there are vectors, else BM25.
		cfg.mode = string(memory.BM25)
		if m.Embedder() != nil {
			cfg.mode = string(memory.Dense)
		}
	}
	if cfg.compat == searchr1.CompatSearchR1 {
		compatWarnings(ctx, searcher, cfg, stderr)
	}
	lib, err := serveSOPs(m, cfg.sopDir, stderr)
	if err != nil {
		return err
	}

	g := newServerGroup(ctx, logger, stderr)
	defer g.cancel()
	ops := newServeOps(g.ctx, m, cfg.collection, cfg.pprof, logger)
	if cfg.retrieveAddr != "" {
		srv, err := retrieveServer(cfg, searcher, logger, ops)
		if err != nil {
			return g.stop(err)
		}
		if err := g.serveHTTP("retrieve", cfg.retrieveAddr, srv); err != nil {
			return g.stop(err)
		}
	}
	if cfg.uiAddr != "" {
		h, err := webui.New(m, webui.Options{EvalReports: cfg.uiReports, Logger: logger})
		if err != nil {
			return g.stop(err)
		}
		if !isLoopback(cfg.uiAddr) {
			fmt.Fprintln(stderr, "memory serve: warning: --ui on a non-loopback address: anyone who can reach it can read the store's documents")
		}
		if err := g.serveHTTP("ui", cfg.uiAddr, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}); err != nil {
			return g.stop(err)
		}
	}
	mopts := mcpserver.Options{Collection: cfg.collection, SOPs: lib, ReadOnly: cfg.readOnly, Logger: logger}
	if cfg.mcpHTTP != "" {
		if cfg.token == "" && !isLoopback(cfg.mcpHTTP) {
			fmt.Fprintln(stderr, "memory serve: warning: --mcp-http on a non-loopback address without --token: anyone who can reach it can read and write the store")
		}
		srv, err := mcpHTTPServer(cfg, mcpserver.New(m, ops.mcpOptions(mopts)), logger, ops)
		if err != nil {
			return g.stop(err)
		}
		if err := g.serveHTTP("mcp", cfg.mcpHTTP, srv); err != nil {
			return g.stop(err)
		}
	}
	if cfg.mcpStdio {
		g.serveMCPStdio(mcpserver.New(m, mopts), stdout, cfg.maxFrame)
	}
	return g.wait()
}

// addFlags adds the flags of memory serve to fs.
func (cfg *serveConfig) addFlags(fs *pflag.FlagSet) {
	cfg.store.addStore(fs)
	cfg.store.addEmbedder(fs, true)
	cfg.store.addIndex(fs)
	cfg.store.addReranker(fs, "cross-encoder `MODEL` (a name or a directory): /retrieve reranks --rerank-depth candidates with it, and /rerank serves it")
	cfg.store.addScoring(fs)
	addCollection(fs, &cfg.collection, "the collection `C` to serve (default: the store's default collection)")
	fs.StringVar(&cfg.retrieveAddr, "retrieve", "", "serve Search-R1 POST /retrieve (and /rerank, /health, /ready, /metrics, /openapi.json) "+
		"on the address `ADDR` (e.g. 127.0.0.1:8000)")
	r := &cfg.retrieve
	fs.IntVar(&r.DefaultTopK, "topk", searchr1.DefaultTopK, "/retrieve: results per query when a request's topk is null")
	fs.IntVar(&r.MaxTopK, "max-topk", 0, fmt.Sprintf("/retrieve: most results per query a request may ask for (more get 422) "+
		"(default %d; %d with --compat search-r1, whose original takes any topk)", searchr1.DefaultMaxTopK, searchr1.DefaultCompatMaxTopK))
	fs.StringVar(&cfg.mode, "mode", "", "/retrieve: retrieval `MODE` hybrid|bm25|dense (default: hybrid; with --compat search-r1, "+
		"dense when the store has an embedder, else bm25)")
	fs.StringVar(&cfg.compatName, "compat", "", "/retrieve: `DIALECT` native (default) or search-r1: answer as the original Search-R1 servers "+
		"(raw BM25 or inner-product scores, BM25 scored as pyserini does unless --bm25-scoring says otherwise, "+
		"topk 0 = --topk, BM25 documents as title/text/contents, whole corpus rows, FastAPI's 422 bodies; "+
		"with --reranker, /retrieve takes topk_retrieval/topk_rerank and /rerank answers strings and raw logits)")
	fs.IntVar(&r.MaxConcurrent, "max-concurrent", 0, "/retrieve: requests searched at once (default 2 x GOMAXPROCS)")
	fs.IntVar(&r.MaxQueries, "max-queries", searchr1.DefaultMaxQueries, "/retrieve: most queries in one request (more get 422)")
	fs.IntVar(&r.MaxQueryBytes, "max-query-bytes", searchr1.DefaultMaxQueryBytes, "/retrieve: most bytes in one query (more get 422)")
	fs.IntVar(&r.MaxPassageBytes, "max-passage-bytes", searchr1.DefaultMaxPassageBytes, "/retrieve: returned passage contents are cut to this many bytes")
	fs.Int64Var(&r.MaxResponseBytes, "max-response-bytes", searchr1.DefaultMaxResponseBytes, "/retrieve: response budget: queries x topk x max-passage-bytes over it get 413")
	fs.IntVar(&r.RerankDepth, "rerank-depth", searchr1.DefaultRerankDepth, "/retrieve with --reranker: candidates retrieved and reranked per query")
	fs.IntVar(&r.Workers, "workers", 0, "/retrieve: queries of one request searched at once (default GOMAXPROCS)")
	fs.DurationVar(&r.ReadTimeout, "read-timeout", 0, "/retrieve: time to read a whole request (default 30s + body cap at 256 KiB/s)")
	fs.DurationVar(&r.WriteTimeout, "write-timeout", 0, "/retrieve: time to search and write a response (default 2m + response budget at 2 MiB/s)")
	fs.DurationVar(&cfg.idleTimeout, "idle-timeout", 0, "HTTP servers: keep-alive connections idle this long are closed (default 60s)")
	fs.StringVar(&cfg.uiAddr, "ui", "", "serve a read-only web page on the address `ADDR` (e.g. 127.0.0.1:8090): collections and documents, "+
		"a search box with each result's per-stage explanation, and --ui-report evaluations as charts")
	fs.StringArrayVar(&cfg.uiReports, "ui-report", nil, "--ui: show the evaluation report `FILE` (written by memory eval --report-out); repeat for several")
	fs.BoolVar(&cfg.mcpStdio, "mcp", false, "serve MCP over stdin/stdout")
	fs.StringVar(&cfg.mcpHTTP, "mcp-http", "", "serve MCP streamable HTTP on the address `ADDR`")
	fs.StringVar(&cfg.token, "token", "", "bearer `TOKEN` required by --mcp-http (default: $MEMORY_MCP_TOKEN)")
	fs.StringVar(&cfg.sopDir, "sops", "", "the folder `DIR` of SOP files for the sop_match tool (default: the store's own sops/)")
	fs.IntVar(&cfg.maxFrame, "mcp-max-frame-bytes", mcpserver.DefaultMaxFrameBytes, "MCP: most bytes in one stdio frame or HTTP request body (more get a JSON-RPC error or 413)")
	fs.BoolVar(&cfg.pprof, "pprof", false, "serve Go's profiler at /debug/pprof/ on every HTTP listener (with --token, the MCP listener's needs it)")
	fs.BoolVar(&cfg.readOnly, "read-only", false, "MCP: leave out memory_add and memory_delete, and open the store read-only (a --retrieve-only server always does)")
	completeValues(fs, modeValues, "mode")
	completeValues(fs, compatValues, "compat")
	completeDirs(fs, "sops")
}

// settle checks the flags and arguments of memory serve (a usage error for the first that
// is wrong) and settles what depends on others: the dialect, the rerank depth of --compat
// search-r1 (unless depthSet, --rerank-depth given), the token from $MEMORY_MCP_TOKEN.
func (cfg *serveConfig) settle(args []string, depthSet bool) error {
	if len(args) > 0 {
		return usagef("unexpected arguments %q (serve takes flags only)", args)
	}
	var err error
	if cfg.compat, err = searchr1.ParseCompat(cfg.compatName); err != nil {
		return usagef("--compat: %v", err)
	}
	r := &cfg.retrieve
	if cfg.compat == searchr1.CompatSearchR1 {
		if !depthSet {
			r.RerankDepth = searchr1.DefaultCompatRetrievalTopK // the original's topk_retrieval
		}
		if memory.Mode(cfg.mode) == memory.Hybrid {
			return usagef("--compat search-r1 reports the scores the original does (BM25 or inner product): use --mode bm25 or dense, not hybrid")
		}
	}
	if err := cfg.check(); err != nil {
		return err
	}
	r.IdleTimeout = cfg.idleTimeout
	if cfg.token == "" {
		cfg.token = os.Getenv("MEMORY_MCP_TOKEN")
	}
	return nil
}

// check reports the first flag out of range as a usage error.
func (cfg serveConfig) check() error {
	r := cfg.retrieve
	if cfg.store.dir == "" {
		return cfg.store.need()
	}
	if cfg.retrieveAddr == "" && !cfg.mcpStdio && cfg.mcpHTTP == "" && cfg.uiAddr == "" {
		return usagef("nothing to serve: give --retrieve, --mcp, --mcp-http and/or --ui")
	}
	if len(cfg.uiReports) > 0 && cfg.uiAddr == "" {
		return usagef("--ui-report needs --ui")
	}
	switch memory.Mode(cfg.mode) {
	case "", memory.Hybrid, memory.BM25, memory.Dense:
	default:
		return usagef("--mode %q: want hybrid, bm25 or dense", cfg.mode)
	}
	if r.DefaultTopK < 1 {
		return usagef("--topk %d: must be at least 1", r.DefaultTopK)
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"max-queries", int64(r.MaxQueries)}, {"max-query-bytes", int64(r.MaxQueryBytes)}, {"max-passage-bytes", int64(r.MaxPassageBytes)},
		{"max-response-bytes", r.MaxResponseBytes}, {"rerank-depth", int64(r.RerankDepth)}, {"mcp-max-frame-bytes", int64(cfg.maxFrame)}} {
		if c.v < 1 {
			return usagef("--%s %d: must be at least 1", c.name, c.v)
		}
	}
	if r.Workers < 0 || r.MaxTopK < 0 || r.ReadTimeout < 0 || r.WriteTimeout < 0 || cfg.idleTimeout < 0 {
		return usagef("--workers, --max-topk and the timeouts must not be negative")
	}
	return nil
}

// compatWarnings tells, on stderr, what keeps a --compat search-r1 server from giving the
// original's bytes: a BM25 analyzer other than en_lucene (the terms differ from
// pyserini's), and documents stored with a title (their "contents" are rebuilt as
// "\"title\"\ntext", not the corpus row as it was).
func compatWarnings(ctx context.Context, c *memory.Collection, cfg serveConfig, stderr io.Writer) {
	if memory.Mode(cfg.mode) == memory.BM25 {
		if w := searchr1.AnalyzerWarning(cfg.compat, c.Analyzer(), c.Name()); w != "" {
			fmt.Fprintln(stderr, "memory serve: warning: "+w)
		}
	}
	docs, err := c.Find(ctx, memory.FindOptions{Limit: 1})
	if err == nil && len(docs) == 1 && docs[0].Title != "" {
		fmt.Fprintln(stderr, `memory serve: warning: documents have titles: /retrieve gives their "contents" as "\"title\"\ntext", which is a corpus row only when its first line was the title in quotes; `+
			"index a Search-R1 corpus with `memory index --compat search-r1` to return its rows byte for byte")
	}
}

// serveSOPs returns the procedures of the sop_match tool: the store's own (sops/ in the
// store), unless dir names a folder; invalid files there are warnings, not errors.
func serveSOPs(m *memory.Memory, dir string, stderr io.Writer) (*sop.Library, error) {
	if dir == "" {
		return m.SOPs(), nil
	}
	return loadSOPs(dir, sop.Options{}, stderr)
}

// retrieveServer is the Search-R1 /retrieve server of cfg over searcher, with ops'
// /metrics, /ready and pprof.
func retrieveServer(cfg serveConfig, searcher searchr1.Searcher, logger *slog.Logger, ops *serveOps) (*http.Server, error) {
	ropts := cfg.retrieve
	ropts.Logger = logger
	ropts.Compat = cfg.compat
	if cfg.mode != "" {
		ropts.SearchOptions = []memory.SearchOption{memory.WithMode(memory.Mode(cfg.mode))}
	}
	reg, err := ops.retrieveOptions(&ropts)
	if err != nil {
		return nil, err
	}
	srv := searchr1.NewRetrieveServer(searcher, ropts)
	srv.Handler = ops.mux(reg, "", srv.Handler)
	return srv, nil
}

// mcpHTTPServer serves s over MCP's streamable HTTP, behind cfg's bearer token, with ops'
// /health, /ready, /metrics and pprof.
func mcpHTTPServer(cfg serveConfig, s *mcp.Server, logger *slog.Logger, ops *serveOps) (*http.Server, error) {
	idle := cfg.idleTimeout
	if idle == 0 {
		idle = 60 * time.Second
	}
	// No ReadTimeout/WriteTimeout here: MCP's streamable HTTP keeps event streams open.
	h, err := ops.mcpHandler(s, cfg.token, mcpserver.NewHTTPHandler(s, mcpserver.HTTPOptions{Token: cfg.token, Logger: logger, MaxBodyBytes: int64(cfg.maxFrame)}))
	if err != nil {
		return nil, err
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idle,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}, nil
}

// serverGroup runs the servers of `memory serve` until ctx ends, one of them fails, or
// the MCP stdio client goes away; then it shuts them all down.
type serverGroup struct {
	ctx      context.Context
	cancel   context.CancelFunc
	logger   *slog.Logger
	stderr   io.Writer
	wg       sync.WaitGroup
	errMu    sync.Mutex
	firstErr error
}

func newServerGroup(ctx context.Context, logger *slog.Logger, stderr io.Writer) *serverGroup {
	ctx, cancel := context.WithCancel(ctx)
	return &serverGroup{ctx: ctx, cancel: cancel, logger: logger, stderr: stderr}
}

// fail records the first error and stops every server.
func (g *serverGroup) fail(err error) {
	g.errMu.Lock()
	if g.firstErr == nil {
		g.firstErr = err
	}
	g.errMu.Unlock()
	g.cancel()
}

// serveHTTP listens on addr and serves srv until the group stops, then shuts it down
// gracefully (within shutdownTimeout).
func (g *serverGroup) serveHTTP(name, addr string, srv *http.Server) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(g.stderr, "memory serve: %s listening on http://%s\n", name, ln.Addr())
	g.wg.Add(2)
	go func() {
		defer g.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.fail(fmt.Errorf("%s: %w", name, err))
		}
	}()
	go func() {
		defer g.wg.Done()
		<-g.ctx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer scancel()
		if err := srv.Shutdown(sctx); err != nil {
			g.logger.Warn("shutdown", "server", name, "err", err)
			_ = srv.Close()
		}
	}()
	return nil
}

// serveMCPStdio serves s over serveStdin and stdout, frames capped at maxFrame bytes (a
// malformed or over-cap frame gets a JSON-RPC error, and serving goes on); the client
// closing its end stops the group.
func (g *serverGroup) serveMCPStdio(s *mcp.Server, stdout io.Writer, maxFrame int) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		t := &mcpserver.StdioTransport{Reader: io.NopCloser(serveStdin), Writer: stdout, MaxFrameBytes: maxFrame, Logger: g.logger}
		err := s.Run(g.ctx, t)
		if err != nil && g.ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
			g.fail(fmt.Errorf("mcp stdio: %w", err))
			return
		}
		g.cancel() // the client went away: stop serving
	}()
}

// stop stops the servers started so far and returns err.
func (g *serverGroup) stop(err error) error {
	g.cancel()
	g.wg.Wait()
	return err
}

// wait blocks until the group stops and returns the first server error.
func (g *serverGroup) wait() error {
	<-g.ctx.Done()
	g.wg.Wait()
	g.errMu.Lock()
	defer g.errMu.Unlock()
	return g.firstErr
}

// isLoopback reports whether addr's host is a loopback address or localhost.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
