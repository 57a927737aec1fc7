package memory

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/agentmem/memory/hybrid"
)

// readService carries the store m's reads across processes: a writer's answers to other
// processes' reads (serveReads, stopServing), and a read-only store's backup and export
// through its writer (remotestream.go).
type readService struct{ m *Memory }

// Readers beside a writer. bbolt lets one process write store.db, or several read it, never
// both: a writer reuses the pages its transactions freed, which a reader in another process
// (with no view of the writer's open transactions) may still be reading. So the writer
// answers the reads of other processes itself: every writable Open of a store directory
// listens on a unix socket (sockName in the directory, or a short path under os.TempDir
// when that is longer than a socket address allows) and records it in its lock file
// (lockinfo.go). A read-only Open that finds the writer's lock connects to it instead:
// the Memory it returns searches, gets and counts through the writer, with the writer's
// embedder, reranker and indexes, so its answers are the writer's.
//
// The protocol is JSON lines over the socket: one request object per line, one response
// object per line, in order, several requests per connection. Each carries "v" (the
// protocol version, remoteProto); a request over maxRequestBytes, a line that is not a
// request, or another version is answered with an error and the connection is closed. The
// writer serves at most maxRemoteConns connections at once, and a reader opens at most
// maxClientConns (its further calls wait for one). Backup and Export are answered with a
// stream of bounded frames after the response line (remotestream.go), a capability the
// writer names in its hello answer.

const (
	remoteProto      = 1
	maxRequestBytes  = 4 << 20   // one request line (a batch of queries, a filter)
	maxResponseBytes = 512 << 20 // one response line, as the client reads it
	maxRemoteConns   = 256       // connections the writer serves at once, from every reader
	maxClientConns   = 16        // connections one read-only Memory opens at once (more calls wait)
	maxIdleConns     = 8
	// maxSockPath is the longest socket path used: sun_path holds 108 bytes on Linux and
	// 104 on the BSDs and macOS, including the final NUL.
	maxSockPath = 103
)

// wireReq is one request.
type wireReq struct {
	V       int         `json:"v"`
	Op      string      `json:"op"` // hello, search, batch, get, vectors, len, ids, sources, collections, exists, colmeta; backup, export (remotestream.go)
	Col     string      `json:"col,omitempty"`
	Query   string      `json:"q,omitempty"`
	Queries []string    `json:"qs,omitempty"`
	ID      string      `json:"id,omitempty"`
	Opts    *wireSearch `json:"opts,omitempty"`
	Cols    []string    `json:"cols,omitempty"` // export: the collections (none: every one)
}

// wireSearch is SearchOptions as sent: every field but the callbacks (a fusion function
// travels by name).
type wireSearch struct {
	Mode              Mode               `json:"mode,omitempty"`
	TopK              int                `json:"topk,omitempty"`
	Window            int                `json:"window,omitempty"`
	RRFK              float64            `json:"rrfk,omitempty"`
	Fusion            string             `json:"fusion,omitempty"` // "" (RRF) or "weighted"
	Weights           *Weights           `json:"weights,omitempty"`
	Where             Where              `json:"where,omitempty"`
	WhereDocument     WhereDocument      `json:"where_document,omitempty"`
	Rerank            bool               `json:"rerank,omitempty"`
	RerankTop         int                `json:"rerank_top,omitempty"`
	MinScore          float64            `json:"min_score,omitempty"`
	MinRelevance      float64            `json:"min_relevance,omitempty"`
	CollapseThreshold float64            `json:"collapse,omitempty"`
	Collections       map[string]float64 `json:"collections,omitempty"`
	AllChunks         bool               `json:"all_chunks,omitempty"`
	Snippets          bool               `json:"snippets,omitempty"`
	Stats             bool               `json:"stats,omitempty"`
	SourceDedup       bool               `json:"source_dedup,omitempty"`
	NoText            bool               `json:"no_text,omitempty"` // a writer before it sends texts: harmless
}

// wireResp is one response.
type wireResp struct {
	V       int            `json:"v"`
	Err     *wireErr       `json:"err,omitempty"`
	Results []Result       `json:"results,omitempty"`
	Batch   [][]Result     `json:"batch,omitempty"`
	Doc     *wireDoc       `json:"doc,omitempty"`
	Vectors [][]float32    `json:"vectors,omitempty"`
	N       int            `json:"n,omitempty"`
	Names   []string       `json:"names,omitempty"`
	Meta    map[string]any `json:"meta,omitempty"` // colmeta: a collection's metadata
	Stats   *SearchStats   `json:"stats,omitempty"`
	PID     int            `json:"pid,omitempty"`    // hello
	Caps    []string       `json:"caps,omitempty"`   // hello: the streaming operations served (remotestream.go)
	Stream  string         `json:"stream,omitempty"` // "frames": frames follow this line (remotestream.go)
	Backup  *BackupInfo    `json:"backup,omitempty"` // a backup stream's end frame
	Export  *ExportStats   `json:"export,omitempty"` // an export stream's end frame
}

// wireDoc is a Document with its embedding (which Document's JSON leaves out).
type wireDoc struct {
	Document
	Embedding []float32 `json:"embedding,omitempty"`
}

// wireErr is an error: its text and the names of the sentinels it matches.
type wireErr struct {
	Msg   string   `json:"msg"`
	Kinds []string `json:"kinds,omitempty"`
}

// wireKinds names the sentinel errors a remote error can match.
var wireKinds = []struct {
	name string
	err  error
}{
	{"not_found", ErrNotFound}, {"collection_not_found", ErrCollectionNotFound},
	{"invalid_option", ErrInvalidOption}, {"invalid_filter", ErrInvalidFilter},
	{"filter_too_large", ErrFilterTooLarge}, {"invalid_collection", ErrInvalidCollection},
	{"query_too_large", ErrQueryTooLarge}, {"no_reranker", ErrNoReranker},
	{"no_embedder", ErrNoEmbedder}, {"embedder_needed", ErrEmbedderNeeded},
	{"corrupt", ErrCorrupt}, {"read_only", ErrReadOnly}, {"closed", ErrClosed},
	{"canceled", context.Canceled}, {"deadline", context.DeadlineExceeded},
}

// remoteError is an error the writer returned: its text, matching (errors.Is) the
// sentinels it matched there.
type remoteError struct {
	msg   string
	kinds []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.kinds }

func toWireErr(err error) *wireErr {
	w := &wireErr{Msg: err.Error()}
	for _, k := range wireKinds {
		if errors.Is(err, k.err) {
			w.Kinds = append(w.Kinds, k.name)
		}
	}
	return w
}

// socketPath is where the writer of dir listens: dir/.memory.sock, or, when that path is
// too long for a socket address, <TempDir>/memory-<uid>/<hash of dir>.sock.
func socketPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if p := filepath.Join(abs, sockName); len(p) <= maxSockPath {
		return p, nil
	}
	sum := sha256.Sum256([]byte(abs))
	base, err := privateTempDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(base, hex.EncodeToString(sum[:12])+".sock")
	if len(p) > maxSockPath {
		return "", fmt.Errorf("memory: no socket path short enough for %s (%s is %d bytes)", dir, p, len(p))
	}
	return p, nil
}

// ---- the writer's side ----

// readServer answers the reads of other processes for a writable Memory.
type readServer struct {
	m    *Memory
	ln   net.Listener
	path string

	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// serveReads makes m, just opened for writing, answer other processes' reads, and records
// this process as the writer in the lock file. A failure to listen is logged: the store
// still opens (read-only opens are then ErrLocked, naming this process).
func (rs readService) serveReads() {
	m := rs.m
	if m.tempDir {
		return
	}
	li := lockInfo{PID: os.Getpid(), Argv: os.Args, Started: time.Now().UTC(), Mode: "writer", Proto: remoteProto}
	path, err := socketPath(m.dir)
	if err == nil {
		// A socket file left by a killed writer: ours now (this process holds the lock).
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = rerr
		}
	}
	var ln net.Listener
	if err == nil {
		ln, err = net.Listen("unix", path)
	}
	if err == nil {
		if cerr := os.Chmod(path, 0o600); cerr != nil {
			m.log.Warn("memory: restricting the read socket", "path", path, "err", cerr)
		}
		ctx, cancel := context.WithCancel(context.Background())
		s := &readServer{m: m, ln: ln, path: path, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
		m.srv = s
		li.Socket = path
		s.wg.Add(1)
		go s.accept()
	} else {
		m.log.Warn("memory: cannot serve reads to other processes; read-only opens beside this writer will fail", "dir", m.dir, "err", err)
	}
	if err := writeLockInfo(m.dir, li); err != nil {
		m.log.Warn("memory: cannot write the lock file", "dir", m.dir, "err", err)
	}
}

// stopServing closes the socket and every connection, waits for the requests under way,
// and removes the lock file. Called by Close before the store closes.
func (rs readService) stopServing() error {
	m := rs.m
	if m.tempDir || m.opts.ReadOnly {
		return nil
	}
	if s := m.srv; s != nil {
		s.cancel()
		s.ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	}
	return removeLockInfo(m.dir)
}

func (s *readServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() == nil {
				s.m.log.Warn("memory: read socket stopped", "path", s.path, "err", err)
			}
			return
		}
		s.mu.Lock()
		full := len(s.conns) >= maxRemoteConns
		if !full && s.ctx.Err() == nil {
			s.conns[c] = struct{}{}
			s.wg.Add(1)
		}
		s.mu.Unlock()
		if full || s.ctx.Err() != nil {
			writeResp(c, &wireResp{V: remoteProto, Err: &wireErr{Msg: fmt.Sprintf("memory: the writer serves at most %d connections", maxRemoteConns)}})
			c.Close()
			continue
		}
		go s.serveConn(c)
	}
}

func writeResp(w io.Writer, r *wireResp) error {
	data, err := json.Marshal(r)
	if err != nil {
		data, _ = json.Marshal(&wireResp{V: remoteProto, Err: toWireErr(fmt.Errorf("memory: encoding the answer: %w", err))})
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// serveConn answers the requests of one connection in order until it ends or one is bad.
func (s *readServer) serveConn(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReaderSize(c, 64<<10)
	bw := bufio.NewWriterSize(c, 64<<10)
	for {
		line, err := readLine(br, maxRequestBytes)
		if err != nil {
			if !errors.Is(err, io.EOF) && s.ctx.Err() == nil {
				writeResp(bw, &wireResp{V: remoteProto, Err: &wireErr{Msg: "memory: bad request: " + err.Error()}})
				bw.Flush()
			}
			return
		}
		var req wireReq
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil || req.V != remoteProto {
			msg := fmt.Sprintf("memory: bad request: protocol version %d, this writer speaks %d", req.V, remoteProto)
			if err != nil {
				msg = "memory: bad request: " + err.Error()
			}
			writeResp(bw, &wireResp{V: remoteProto, Err: &wireErr{Msg: msg}})
			bw.Flush()
			return
		}
		if streamOp(req.Op) {
			s.serveStream(c, br, bw, &req)
			return
		}
		resp := s.answer(&req)
		if err := writeResp(bw, resp); err != nil {
			return
		}
		if err := bw.Flush(); err != nil {
			return
		}
	}
}

// readLine reads one line of at most max bytes (without its newline). A longer line is an
// error; so is an end of input in the middle of one.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > max+1 {
			return nil, fmt.Errorf("a line over %d bytes", max)
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf[:len(buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(buf) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// answer runs one request on the writer's Memory.
func (s *readServer) answer(req *wireReq) *wireResp {
	ctx := s.ctx
	m := s.m
	c := m.Collection(req.Col)
	out := &wireResp{V: remoteProto}
	var err error
	switch req.Op {
	case "hello":
		out.PID = os.Getpid()
		out.Caps = streamCaps
	case "search", "batch":
		var opts []SearchOption
		var st SearchStats
		if opts, err = req.Opts.options(); err == nil {
			if req.Opts != nil && req.Opts.Stats {
				opts = append(opts, WithStats(&st))
				out.Stats = &st
			}
			if req.Op == "search" {
				out.Results, err = c.Search(ctx, req.Query, opts...)
			} else {
				out.Batch, err = c.SearchBatch(ctx, req.Queries, opts...)
			}
		}
	case "get":
		var d Document
		if d, err = c.Get(ctx, req.ID); err == nil {
			out.Doc = &wireDoc{Document: d, Embedding: d.Embedding}
		}
	case "vectors":
		out.Vectors, err = c.Vectors(ctx, req.ID)
	case "len":
		out.N, err = c.Count(ctx)
	case "ids":
		if _, err = c.existing(); err == nil {
			out.Names, err = c.IDs(ctx)
		}
	case "sources":
		out.Names, err = c.Sources(ctx)
	case "collections":
		out.Names, err = m.Collections(ctx)
	case "exists":
		_, err = c.existing()
	case "colmeta":
		out.Meta, err = m.CollectionMetadata(ctx, req.Col)
	default:
		err = fmt.Errorf("%w: unknown request %q", ErrInvalidOption, req.Op)
	}
	if err != nil && s.ctx.Err() != nil { // cut short by Close: the reader must not take it for its own cancellation
		err = fmt.Errorf("%w: the writer closed the store during the request (%v)", ErrClosed, err)
	}
	if err != nil {
		return &wireResp{V: remoteProto, Err: toWireErr(err)}
	}
	return out
}

// options turns the wire form back into search options.
func (w *wireSearch) options() ([]SearchOption, error) {
	if w == nil {
		return nil, nil
	}
	var fusion hybrid.FusionFunc
	switch w.Fusion {
	case "":
	case "weighted":
		fusion = hybrid.WeightedScore
	default:
		return nil, fmt.Errorf("%w: fusion %q", ErrInvalidOption, w.Fusion)
	}
	return []SearchOption{func(so *SearchOptions) {
		*so = SearchOptions{Mode: w.Mode, TopK: w.TopK, Window: w.Window, RRFK: w.RRFK, Fusion: fusion,
			Weights: w.Weights, Where: w.Where, WhereDocument: w.WhereDocument, Rerank: w.Rerank,
			RerankTop: w.RerankTop, MinScore: w.MinScore, MinRelevance: w.MinRelevance, CollapseThreshold: w.CollapseThreshold,
			Collections: w.Collections, AllChunks: w.AllChunks, Snippets: w.Snippets, SourceDedup: w.SourceDedup,
			NoText: w.NoText}
	}}, nil
}

// toWire gives the wire form of search options, and where their stats go.
func toWire(opts []SearchOption) (*wireSearch, *SearchStats, error) {
	var so SearchOptions
	for _, fn := range opts {
		fn(&so)
	}
	w := &wireSearch{Mode: so.Mode, TopK: so.TopK, Window: so.Window, RRFK: so.RRFK, Weights: so.Weights,
		Where: so.Where, WhereDocument: so.WhereDocument, Rerank: so.Rerank, RerankTop: so.RerankTop,
		MinScore: so.MinScore, MinRelevance: so.MinRelevance, CollapseThreshold: so.CollapseThreshold, Collections: so.Collections,
		AllChunks: so.AllChunks, Snippets: so.Snippets, Stats: so.stats != nil, SourceDedup: so.SourceDedup,
		NoText: so.NoText}
	if so.Fusion != nil {
		switch reflect.ValueOf(so.Fusion).Pointer() {
		case reflect.ValueOf(hybrid.RRF).Pointer():
		case reflect.ValueOf(hybrid.WeightedScore).Pointer():
			w.Fusion = "weighted"
		default:
			return nil, nil, fmt.Errorf("%w: a custom fusion function cannot be sent to the writer this read-only store reads through (use hybrid.RRF or hybrid.WeightedScore)", ErrInvalidOption)
		}
	}
	return w, so.stats, nil
}

// ---- the reader's side ----

// remoteClient is a read-only Memory's connection to the writer of its store.
type remoteClient struct {
	dir  string
	path string
	pid  int
	caps []string // the streaming operations the writer serves (its hello answer)

	slots  chan struct{} // one per connection in use (maxClientConns)
	mu     sync.Mutex
	idle   []net.Conn
	closed bool
}

// dialRemote connects to the writer of dir, found in its lock file.
func dialRemote(dir string) (*remoteClient, error) {
	li, err := readLockInfo(dir)
	if err != nil {
		return nil, err
	}
	if li == nil || li.Socket == "" {
		return nil, errors.New("the writer serves no read socket (it is starting, or an older version)")
	}
	if li.Proto != remoteProto {
		return nil, fmt.Errorf("the writer speaks protocol %d, this build %d", li.Proto, remoteProto)
	}
	rc := &remoteClient{dir: dir, path: li.Socket, pid: li.PID, slots: make(chan struct{}, maxClientConns)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hello, err := rc.call(ctx, &wireReq{Op: "hello"})
	if err != nil {
		rc.close()
		return nil, err
	}
	rc.caps = hello.Caps
	return rc, nil
}

// gone is the error of a writer that went away: ErrWriterGone, with why.
func (rc *remoteClient) gone(err error) error {
	return fmt.Errorf("%w: %s (pid %d): %v", ErrWriterGone, rc.dir, rc.pid, err)
}

func (rc *remoteClient) conn(ctx context.Context) (net.Conn, error) {
	rc.mu.Lock()
	if rc.closed {
		rc.mu.Unlock()
		return nil, ErrClosed
	}
	if n := len(rc.idle); n > 0 {
		c := rc.idle[n-1]
		rc.idle = rc.idle[:n-1]
		rc.mu.Unlock()
		return c, nil
	}
	rc.mu.Unlock()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", rc.path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, rc.gone(err)
	}
	return c, nil
}

func (rc *remoteClient) putIdle(c net.Conn) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.closed || len(rc.idle) >= maxIdleConns {
		c.Close()
		return
	}
	rc.idle = append(rc.idle, c)
}

// begin stamps req with the protocol version, encodes it as one line's worth of JSON
// (at most maxRequestBytes) and takes one of the client's request slots, waiting for
// it until ctx ends. The caller calls release when the request is over.
func (rc *remoteClient) begin(ctx context.Context, req *wireReq) (data []byte, release func(), err error) {
	req.V = remoteProto
	data, err = json.Marshal(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	if len(data) > maxRequestBytes {
		return nil, nil, fmt.Errorf("%w: a request of %d bytes to the writer (at most %d)", ErrQueryTooLarge, len(data), maxRequestBytes)
	}
	select {
	case rc.slots <- struct{}{}:
		return data, func() { <-rc.slots }, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// call sends one request and reads its answer. A connection that fails is dropped: the
// error is ErrWriterGone (or the context's error when it ended the call).
func (rc *remoteClient) call(ctx context.Context, req *wireReq) (*wireResp, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, release, err := rc.begin(ctx, req)
	if err != nil {
		return nil, err
	}
	defer release()
	c, err := rc.conn(ctx)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	resp, err := exchange(c, append(data, '\n'))
	if !stop() || err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return nil, rc.gone(err)
		}
	} else {
		rc.putIdle(c)
	}
	if resp.Err != nil {
		e := &remoteError{msg: resp.Err.Msg}
		for _, k := range wireKinds {
			for _, name := range resp.Err.Kinds {
				if k.name == name {
					e.kinds = append(e.kinds, k.err)
				}
			}
		}
		if errors.Is(e, ErrClosed) { // the writer is closing
			return nil, rc.gone(e)
		}
		return nil, e
	}
	return resp, nil
}

// exchange writes one request line on c and reads the response line.
func exchange(c net.Conn, line []byte) (*wireResp, error) {
	if _, err := c.Write(line); err != nil {
		return nil, err
	}
	// A fresh reader per call: a connection carries one request at a time, and the
	// response is the only line in flight.
	br := bufio.NewReaderSize(c, 64<<10)
	data, err := readLine(br, maxResponseBytes)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if br.Buffered() > 0 {
		return nil, errors.New("the writer sent more than one answer")
	}
	var resp wireResp
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("an answer that does not parse: %v", err)
	}
	if resp.V != remoteProto {
		return nil, fmt.Errorf("an answer of protocol %d", resp.V)
	}
	return &resp, nil
}

func (rc *remoteClient) close() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.closed = true
	for _, c := range rc.idle {
		c.Close()
	}
	rc.idle = nil
	return nil
}

// remote* are the read methods of a Memory that reads through its writer.

func (c *Collection) remoteSearch(ctx context.Context, query string, opts []SearchOption) ([]Result, error) {
	w, st, err := toWire(opts)
	if err != nil {
		return nil, err
	}
	ask, err := searcher{c.m}.rerankHere(w)
	if err != nil {
		return nil, err
	}
	resp, err := c.m.remote.call(ctx, &wireReq{Op: "search", Col: c.name, Query: query, Opts: ask})
	if err != nil {
		return nil, err
	}
	if st != nil && resp.Stats != nil {
		*st = *resp.Stats
	}
	if resp.Results == nil {
		resp.Results = []Result{}
	}
	if ask == w {
		return resp.Results, nil
	}
	t := time.Now()
	out, err := searcher{c.m}.finishRerank(ctx, query, w, resp.Results)
	if st != nil {
		st.Rerank = time.Since(t)
	}
	return out, err
}

func (c *Collection) remoteBatch(ctx context.Context, queries []string, opts []SearchOption) ([][]Result, error) {
	w, _, err := toWire(opts)
	if err != nil {
		return nil, err
	}
	w.Stats = false
	sr := searcher{c.m}
	ask, err := sr.rerankHere(w)
	if err != nil {
		return nil, err
	}
	resp, err := c.m.remote.call(ctx, &wireReq{Op: "batch", Col: c.name, Queries: queries, Opts: ask})
	if err != nil {
		return nil, err
	}
	if len(resp.Batch) != len(queries) && ask != w {
		return nil, fmt.Errorf("%w: %d answers for %d queries", ErrWriterGone, len(resp.Batch), len(queries))
	}
	for i, r := range resp.Batch {
		if r == nil {
			resp.Batch[i] = []Result{}
		}
		if ask != w {
			if resp.Batch[i], err = sr.finishRerank(ctx, queries[i], w, resp.Batch[i]); err != nil {
				return nil, err
			}
		}
	}
	return resp.Batch, nil
}

// rerankHere is what to ask the writer for a search w: w itself, unless this reader
// reranks it with a reranker of its own (w asks for a rerank and the reader was opened
// WithReranker), which the writer does not have: then the writer is asked for the first
// RerankTop candidates unreranked, before MinScore, MinRelevance, source de-duplication and
// the top k, which finishRerank applies here in Search's order. A near-duplicate collapse, which runs
// after the rerank over the writer's stored vectors, cannot follow a rerank done here:
// ErrInvalidOption.
func (sr searcher) rerankHere(w *wireSearch) (*wireSearch, error) {
	m := sr.m
	if !w.Rerank || m.opts.Reranker == nil {
		return w, nil
	}
	if w.CollapseThreshold > 0 {
		return nil, fmt.Errorf("%w: a collapse after this process's own reranker cannot run through the writer (the writer holds the vectors); rerank in the writer, or search without the collapse", ErrInvalidOption)
	}
	k, top := rerankSizes(w)
	ask := *w
	ask.Rerank, ask.RerankTop, ask.MinScore, ask.MinRelevance, ask.SourceDedup = false, 0, 0, 0, false
	ask.TopK = max(k, top)
	return &ask, nil
}

// rerankSizes are the top k and the rerank depth of w, with Search's defaults.
func rerankSizes(w *wireSearch) (k, top int) {
	so := SearchOptions{TopK: w.TopK, Window: w.Window, RerankTop: w.RerankTop}
	so.normaliseSizes() // w's sizes were checked when its options were made; negatives give 0s
	return so.TopK, so.RerankTop
}

// finishRerank reranks the writer's unreranked candidates res of query with this reader's
// reranker and applies w's source de-duplication, MinScore, MinRelevance and top k, as
// Search does.
func (sr searcher) finishRerank(ctx context.Context, query string, w *wireSearch, res []Result) ([]Result, error) {
	m := sr.m
	k, top := rerankSizes(w)
	n := min(top, len(res))
	passages := make([]string, n)
	for i, r := range res[:n] {
		passages[i] = embedText(r.Title, r.Text)
	}
	if n > 0 {
		if err := rerankHead(ctx, m.opts.Reranker, query, passages, res[:n], func(r *Result) *Result { return r }); err != nil {
			return nil, err
		}
	}
	if w.SourceDedup {
		res = dedupeSources(res, func(r Result) string { return r.Source })
	}
	return topOf(res, func(r *Result) *Result { return r }, k, w.MinScore, w.MinRelevance), nil
}

func (c *Collection) remoteGet(ctx context.Context, id string) (Document, error) {
	resp, err := c.m.remote.call(ctx, &wireReq{Op: "get", Col: c.name, ID: id})
	if err != nil {
		return Document{}, err
	}
	if resp.Doc == nil {
		return Document{}, fmt.Errorf("%w: the writer sent no document for %q", ErrWriterGone, id)
	}
	d := resp.Doc.Document
	d.Embedding = resp.Doc.Embedding
	return d, nil
}

func (c *Collection) remoteCall(ctx context.Context, op, id string) (*wireResp, error) {
	return c.m.remote.call(ctx, &wireReq{Op: op, Col: c.name, ID: id})
}
