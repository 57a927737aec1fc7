package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/mcpserver"
	"github.com/agentmem/memory/rerank"
	"github.com/agentmem/memory/searchr1"
	"github.com/agentmem/memory/sop"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	register(command{
		name:    "serve",
		summary: "serve a store: Search-R1 /retrieve over HTTP, MCP over stdio or HTTP",
		run:     runServe,
	})
}

// serveStdin is the MCP stdio input (a variable so tests can feed it).
var serveStdin io.Reader = os.Stdin

// shutdownTimeout bounds the graceful shutdown of the HTTP servers.
const shutdownTimeout = 10 * time.Second

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	var sf storeFlags
	sf.register(fs, true)
	collection := fs.String("collection", "", "collection to serve (default: the store's default collection)")
	retrieveAddr := fs.String("retrieve", "", "serve Search-R1 POST /retrieve and GET /health on this address (e.g. 127.0.0.1:8000)")
	topK := fs.Int("topk", searchr1.DefaultTopK, "/retrieve: results per query when a request's topk is null")
	mode := fs.String("mode", "", "/retrieve: retrieval mode hybrid|bm25|dense (default: hybrid)")
	maxConc := fs.Int("max-concurrent", 0, "/retrieve: requests searched at once (default 2 x GOMAXPROCS)")
	maxQueries := fs.Int("max-queries", searchr1.DefaultMaxQueries, "/retrieve: most queries in one request (more get 422)")
	maxQueryBytes := fs.Int("max-query-bytes", searchr1.DefaultMaxQueryBytes, "/retrieve: most bytes in one query (more get 422)")
	maxPassageBytes := fs.Int("max-passage-bytes", searchr1.DefaultMaxPassageBytes, "/retrieve: returned passage contents are cut to this many bytes")
	maxResponseBytes := fs.Int64("max-response-bytes", searchr1.DefaultMaxResponseBytes, "/retrieve: response budget: queries x topk x max-passage-bytes over it get 413")
	rerankDepth := fs.Int("rerank-depth", searchr1.DefaultRerankDepth, "/retrieve with --reranker: candidates retrieved and reranked per query")
	workers := fs.Int("workers", 0, "/retrieve: queries of one request searched at once (default GOMAXPROCS)")
	readTimeout := fs.Duration("read-timeout", 0, "/retrieve: time to read a whole request (default 30s + body cap at 256 KiB/s)")
	writeTimeout := fs.Duration("write-timeout", 0, "/retrieve: time to search and write a response (default 2m + response budget at 2 MiB/s)")
	idleTimeout := fs.Duration("idle-timeout", 0, "HTTP servers: keep-alive connections idle this long are closed (default 60s)")
	mcpStdio := fs.Bool("mcp", false, "serve MCP over stdin/stdout")
	mcpHTTP := fs.String("mcp-http", "", "serve MCP streamable HTTP on this address")
	token := fs.String("token", "", "bearer token required by --mcp-http (default: $MEMORY_MCP_TOKEN)")
	sopDir := fs.String("sops", "", "directory of SOP files for the sop_match tool (default: the store's own sops/)")
	readOnly := fs.Bool("read-only", false, "MCP: leave out memory_add and memory_delete")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: memory serve --store DIR [--retrieve ADDR] [--mcp] [--mcp-http ADDR [--token T]] [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "memory serve: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	if sf.dir == "" {
		fmt.Fprintln(stderr, "memory serve: --store is required")
		return errUsage
	}
	if *retrieveAddr == "" && !*mcpStdio && *mcpHTTP == "" {
		fmt.Fprintln(stderr, "memory serve: nothing to serve: give --retrieve, --mcp and/or --mcp-http")
		return errUsage
	}
	switch memory.Mode(*mode) {
	case "", memory.Hybrid, memory.BM25, memory.Dense:
	default:
		fmt.Fprintf(stderr, "memory serve: --mode %q: want hybrid, bm25 or dense\n", *mode)
		return errUsage
	}
	if *topK < 1 {
		fmt.Fprintf(stderr, "memory serve: --topk %d: must be at least 1\n", *topK)
		return errUsage
	}
	for _, c := range []struct {
		name string
		v    int64
	}{{"max-queries", int64(*maxQueries)}, {"max-query-bytes", int64(*maxQueryBytes)}, {"max-passage-bytes", int64(*maxPassageBytes)},
		{"max-response-bytes", *maxResponseBytes}, {"rerank-depth", int64(*rerankDepth)}} {
		if c.v < 1 {
			fmt.Fprintf(stderr, "memory serve: --%s %d: must be at least 1\n", c.name, c.v)
			return errUsage
		}
	}
	if *workers < 0 || *readTimeout < 0 || *writeTimeout < 0 || *idleTimeout < 0 {
		fmt.Fprintln(stderr, "memory serve: --workers and the timeouts must not be negative")
		return errUsage
	}
	if *token == "" {
		*token = os.Getenv("MEMORY_MCP_TOKEN")
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// The reranker is loaded here, once, so /retrieve and /rerank can use it as well as
	// the store's own searches.
	var reranker rerank.Reranker
	var extra []memory.Option
	if sf.reranker != "" {
		r, err := loadReranker(sf.reranker)
		if err != nil {
			return err
		}
		if c, ok := r.(io.Closer); ok {
			defer c.Close()
		}
		reranker = r
		extra = append(extra, memory.WithReranker(r))
		sf.reranker = ""
	}
	m, err := sf.open(sf.dir, stderr, extra...)
	if err != nil {
		return err
	}
	defer m.Close()
	// A mistyped --collection fails here, naming the collections there are, rather than
	// serving an empty one.
	searcher, err := openCollection(m, *collection)
	if err != nil {
		return err
	}

	lib := m.SOPs() // the store's own procedures (sops/ in the store), unless --sops names a folder
	if *sopDir != "" {
		lib, err = sop.LoadDir(*sopDir)
		if err != nil {
			if !errors.Is(err, sop.ErrInvalidSOP) {
				return err
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(stderr, "warning: %s\n", line)
			}
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		errMu.Unlock()
		cancel()
	}
	serveHTTP := func(name, addr string, srv *http.Server) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(stderr, "memory serve: %s listening on http://%s\n", name, ln.Addr())
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fail(fmt.Errorf("%s: %w", name, err))
			}
		}()
		go func() {
			defer wg.Done()
			<-ctx.Done()
			sctx, scancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer scancel()
			if err := srv.Shutdown(sctx); err != nil {
				logger.Warn("shutdown", "server", name, "err", err)
				_ = srv.Close()
			}
		}()
		return nil
	}

	if *retrieveAddr != "" {
		ropts := searchr1.RetrieveOptions{
			DefaultTopK: *topK, MaxConcurrent: *maxConc, Logger: logger,
			MaxQueries: *maxQueries, MaxQueryBytes: *maxQueryBytes, MaxPassageBytes: *maxPassageBytes,
			MaxResponseBytes: *maxResponseBytes, Workers: *workers,
			Reranker: reranker, RerankDepth: *rerankDepth,
			ReadTimeout: *readTimeout, WriteTimeout: *writeTimeout, IdleTimeout: *idleTimeout,
		}
		if *mode != "" {
			ropts.SearchOptions = []memory.SearchOption{memory.WithMode(memory.Mode(*mode))}
		}
		if err := serveHTTP("retrieve", *retrieveAddr, searchr1.NewRetrieveServer(searcher, ropts)); err != nil {
			cancel()
			wg.Wait()
			return err
		}
	}
	mopts := mcpserver.Options{Collection: *collection, SOPs: lib, ReadOnly: *readOnly, Logger: logger}
	if *mcpHTTP != "" {
		if *token == "" && !isLoopback(*mcpHTTP) {
			fmt.Fprintln(stderr, "memory serve: warning: --mcp-http on a non-loopback address without --token: anyone who can reach it can read and write the store")
		}
		idle := *idleTimeout
		if idle == 0 {
			idle = 60 * time.Second
		}
		// No ReadTimeout/WriteTimeout here: MCP's streamable HTTP keeps event streams open.
		srv := &http.Server{
			Handler:           mcpserver.NewHTTPHandler(mcpserver.New(m, mopts), *token, logger),
			ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idle,
			ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}
		if err := serveHTTP("mcp", *mcpHTTP, srv); err != nil {
			cancel()
			wg.Wait()
			return err
		}
	}
	if *mcpStdio {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := &mcp.IOTransport{Reader: io.NopCloser(serveStdin), Writer: nopWriteCloser{stdout}}
			err := mcpserver.New(m, mopts).Run(ctx, t)
			if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
				fail(fmt.Errorf("mcp stdio: %w", err))
				return
			}
			cancel() // the client went away: stop serving
		}()
	}
	<-ctx.Done()
	wg.Wait()
	errMu.Lock()
	defer errMu.Unlock()
	return firstErr
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

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
