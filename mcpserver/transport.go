package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caps of the stdio transport and of the HTTP handler's request bodies.
const (
	// DefaultMaxFrameBytes is the default cap on one inbound JSON-RPC frame (a line of
	// stdio, an HTTP request body): above the largest arguments a tool accepts
	// (4 MiB), so that a too-big tool call that fits in a frame gets a tool
	// error naming its cap, and small enough that a frame's decoding stays cheap.
	DefaultMaxFrameBytes = 8 << 20
	// defaultMaxInFlightBytes is the default budget of the calls a connection has read
	// and not yet answered: their frames' bytes, plus callOverhead each. A call over the
	// budget waits (and the reading of further frames with it) until earlier calls are
	// answered, so that a client pipelining calls cannot make the server hold them all
	// decoded at once (a call of 1 MB can cost 40 MB while it runs); a call alone is
	// always admitted.
	defaultMaxInFlightBytes = 4 << 20
	// defaultMaxFrameDepth is the default cap on the nesting of JSON objects and arrays in
	// one frame (no tool's arguments need more than a few dozen levels).
	defaultMaxFrameDepth = 128
	// defaultDrainTimeout is how long, by default, a stdio connection whose input has
	// ended waits for the answers of the calls it has read (as `memory serve` waits for
	// its HTTP servers' requests when it shuts down).
	defaultDrainTimeout = 10 * time.Second
	// codeServerClosing is the JSON-RPC error code of a call left unanswered when the
	// connection ends (the SDK's own "server is closing").
	codeServerClosing = -32004
)

// StdioTransport is an [mcp.Transport] over newline-delimited JSON that survives bad
// input: each frame (line) is read with a size cap, and a frame that is over the cap
// (discarded as it streams, never buffered whole), not JSON (NaN, Infinity, a cut line),
// nested deeper than the depth cap, not an object (a batch array, a number) or not a
// JSON-RPC 2.0 message is answered with a JSON-RPC error response (-32700 parse error or
// -32600 invalid request; its id is the frame's whenever its top-level "id" member can be
// read, null otherwise) and the connection goes on with the next line. The SDK's own stdio
// transport ends the session on any of these.
//
// When the input ends (the client closed its end), the calls already read are still
// answered: the end is reported to the server only once each has its answer, or once
// DrainTimeout has passed, when those still running are answered with an error (code
// -32004, "server is closing") and the server cancels them.
type StdioTransport struct {
	// Reader and Writer are the client's stream; Reader is closed with the connection
	// when it is an io.Closer, Writer never.
	Reader io.Reader
	Writer io.Writer
	// MaxFrameBytes caps one frame, its newline excluded (0: DefaultMaxFrameBytes).
	MaxFrameBytes int
	// MaxDepth caps the nesting of one frame (0: 128).
	MaxDepth int
	// MaxInFlightBytes is the budget of unanswered calls (0: 4 MiB).
	MaxInFlightBytes int
	// DrainTimeout bounds the wait, once the input has ended, for the answers of the
	// calls already read (0: 10 s).
	DrainTimeout time.Duration
	// Logger receives a warning for each rejected frame (nil: slog.Default()).
	Logger *slog.Logger
}

// Connect implements [mcp.Transport].
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	if t.Reader == nil || t.Writer == nil {
		return nil, errors.New("mcpserver: StdioTransport needs a Reader and a Writer")
	}
	logger := t.Logger
	if logger == nil {
		logger = slog.Default()
	}
	budget := int64(t.MaxInFlightBytes)
	if budget <= 0 {
		budget = defaultMaxInFlightBytes
	}
	drain := t.DrainTimeout
	if drain <= 0 {
		drain = defaultDrainTimeout
	}
	c := &stdioConn{
		fr:       newFrameReader(t.Reader, t.MaxFrameBytes, t.MaxDepth),
		budget:   newByteBudget(budget),
		drain:    drain,
		inFlight: map[jsonrpc.ID]int64{},
		r:        t.Reader,
		w:        t.Writer,
		logger:   logger,
		incoming: make(chan msgOrErr),
		closed:   make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
}

type msgOrErr struct {
	msg jsonrpc.Message
	err error
}

// stdioConn is the connection of StdioTransport. A goroutine reads frames, answers the
// bad ones itself, and hands the good ones to Read, which a Close unblocks.
type stdioConn struct {
	fr     *frameReader
	r      io.Reader
	w      io.Writer
	logger *slog.Logger

	writeMu sync.Mutex // serialises writes: responses from the SDK and frame errors

	budget    *byteBudget
	drain     time.Duration // DrainTimeout
	flightMu  sync.Mutex
	inFlight  map[jsonrpc.ID]int64 // unanswered calls: their share of budget
	abandoned map[jsonrpc.ID]bool  // calls answered "server is closing" by drain

	incoming  chan msgOrErr
	closeOnce sync.Once
	closed    chan struct{}
}

func (c *stdioConn) readLoop() {
	for {
		msg, ferr, err := c.fr.next()
		if ferr == nil && err == nil {
			ferr = c.admit(msg)
		}
		if err == nil && ferr != nil {
			c.logger.Warn("mcp: rejected a frame", "code", ferr.Code, "err", ferr.Message)
			if err = c.writeRaw(ferr.response()); err == nil {
				continue
			}
		}
		if err != nil {
			// The SDK stops writing answers once a read fails: let the calls it has
			// answer first.
			c.drainCalls()
		}
		select {
		case c.incoming <- msgOrErr{msg: msg, err: err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// drainCalls waits, within c.drain, until every call read has been answered; those still
// unanswered then are answered with a "server is closing" error, and their late answers
// dropped.
func (c *stdioConn) drainCalls() {
	timer := time.NewTimer(c.drain)
	defer timer.Stop()
	if c.budget.waitIdle(c.closed, timer.C) {
		return
	}
	c.flightMu.Lock()
	defer c.flightMu.Unlock()
	for id, n := range c.inFlight {
		raw, err := json.Marshal(id.Raw())
		if err != nil {
			continue
		}
		fe := &frameError{ID: raw, Code: codeServerClosing,
			Message: fmt.Sprintf("server is closing: the input ended and the call was not answered within %v (DrainTimeout)", c.drain)}
		if err := c.writeRaw(fe.response()); err != nil {
			c.logger.Warn("mcp: cannot answer a call at the end of the input", "err", err)
		}
		if c.abandoned == nil {
			c.abandoned = map[jsonrpc.ID]bool{}
		}
		c.abandoned[id] = true
		delete(c.inFlight, id)
		c.budget.release(n)
	}
}

// callOverhead is what each unanswered call counts against the budget on top of its
// frame, so that the budget also bounds the number of calls in flight.
const callOverhead = 64 << 10

// admit waits until msg, when it is a call, fits in the budget of unanswered calls, and
// records it; a call reusing the id of an unanswered one is refused.
func (c *stdioConn) admit(msg jsonrpc.Message) *frameError {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return nil
	}
	id, _ := json.Marshal(req.ID.Raw())
	c.flightMu.Lock()
	_, dup := c.inFlight[req.ID]
	c.flightMu.Unlock()
	if dup {
		return &frameError{ID: id, Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: id already in use by an unanswered call"}
	}
	n := int64(len(req.Params)) + callOverhead
	if !c.budget.acquire(n, c.closed) {
		return nil // closing: the next read reports it
	}
	c.flightMu.Lock()
	c.inFlight[req.ID] = n
	c.flightMu.Unlock()
	return nil
}

// claim takes the call resp answers off the unanswered ones, returning its share of the
// budget (released once the answer is written); drop when drainCalls answered it already.
func (c *stdioConn) claim(resp *jsonrpc.Response) (n int64, drop bool) {
	c.flightMu.Lock()
	defer c.flightMu.Unlock()
	if c.abandoned[resp.ID] {
		return 0, true
	}
	n = c.inFlight[resp.ID]
	delete(c.inFlight, resp.ID)
	return n, false
}

// byteBudget is a weighted semaphore: acquire waits until n more fits under max, or
// nothing is held (so one request larger than max still goes through alone).
type byteBudget struct {
	mu      sync.Mutex
	used    int64
	max     int64
	wake    chan struct{} // closed (and replaced) by each release
	waiting int           // acquire calls waiting (for tests)
}

func newByteBudget(max int64) *byteBudget {
	return &byteBudget{max: max, wake: make(chan struct{})}
}

// acquire takes n, waiting while it does not fit; false when done closes first.
func (b *byteBudget) acquire(n int64, done <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if b.used == 0 || b.used+n <= b.max {
			b.used += n
			b.mu.Unlock()
			return true
		}
		wake := b.wake
		b.waiting++
		b.mu.Unlock()
		select {
		case <-wake:
		case <-done:
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		select {
		case <-done:
			return false
		default:
		}
	}
}

// waitIdle waits until nothing is held: true then, false when done closes or timeout
// fires first.
func (b *byteBudget) waitIdle(done <-chan struct{}, timeout <-chan time.Time) bool {
	for {
		b.mu.Lock()
		if b.used == 0 {
			b.mu.Unlock()
			return true
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-done:
			return false
		case <-timeout:
			return false
		}
	}
}

// waiters is the number of acquire calls waiting.
func (b *byteBudget) waiters() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// release gives n back and wakes the waiters.
func (b *byteBudget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	close(b.wake)
	b.wake = make(chan struct{})
}

// Read implements [mcp.Connection].
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case v := <-c.incoming:
		return v.msg, v.err
	}
}

// Write implements [mcp.Connection].
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		n, drop := c.claim(resp)
		if drop {
			return nil // answered already: the input ended and DrainTimeout passed
		}
		if n > 0 {
			defer c.budget.release(n)
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcpserver: encoding a message: %w", err)
	}
	return c.writeRaw(data)
}

func (c *stdioConn) writeRaw(data []byte) error {
	select {
	case <-c.closed:
		return mcp.ErrConnectionClosed
	default:
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(data, '\n'))
	return err
}

// Close implements [mcp.Connection].
func (c *stdioConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		if rc, ok := c.r.(io.Closer); ok {
			err = rc.Close()
		}
	})
	return err
}

// SessionID implements [mcp.Connection]: a stdio connection has none.
func (c *stdioConn) SessionID() string { return "" }

// frameError is the JSON-RPC error answering a rejected frame.
type frameError struct {
	ID      json.RawMessage // the frame's id, or nil for null
	Code    int64
	Message string
}

// response is the JSON-RPC 2.0 error response of e, without its newline.
func (e *frameError) response() []byte {
	id := e.ID
	if id == nil {
		id = json.RawMessage("null")
	}
	data, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{e.Code, e.Message}})
	if err != nil { // cannot happen: id is a JSON string or number
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return data
}

// idPrefixBytes is how much of an over-cap frame is kept to recover its id.
const idPrefixBytes = 4096

// frameReader reads newline-delimited JSON-RPC frames with a size and a depth cap.
type frameReader struct {
	br       *bufio.Reader
	max      int
	maxDepth int
}

func newFrameReader(r io.Reader, maxBytes, maxDepth int) *frameReader {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxFrameBytes
	}
	if maxDepth <= 0 {
		maxDepth = defaultMaxFrameDepth
	}
	return &frameReader{br: bufio.NewReaderSize(r, 64<<10), max: maxBytes, maxDepth: maxDepth}
}

// next returns the next message, or the error answering a bad frame, or a read error
// (io.EOF at the end of the stream). Blank lines are skipped; a last line without its
// newline is still a frame.
func (fr *frameReader) next() (jsonrpc.Message, *frameError, error) {
	for {
		line, over, err := fr.readLine()
		if over {
			return nil, &frameError{ID: frameID(line), Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("Invalid Request: frame over %d bytes", fr.max)}, nil
		}
		if err != nil && err != io.EOF {
			return nil, nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if err != nil {
				return nil, nil, err
			}
			continue
		}
		msg, ferr := fr.decode(line)
		return msg, ferr, nil
	}
}

// readLine reads up to the next newline into a new buffer (the message decoded from it
// may keep parts of it). Over the cap, it keeps only the first idPrefixBytes, discards
// the rest as it arrives, and reports over.
func (fr *frameReader) readLine() (line []byte, over bool, err error) {
	var buf []byte
	for {
		chunk, err := fr.br.ReadSlice('\n')
		if !over {
			n := len(buf) + len(chunk)
			if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' {
				n--
			}
			if n > fr.max {
				over = true
				buf = buf[:min(len(buf), idPrefixBytes)]
				buf = append(buf, chunk[:min(len(chunk), idPrefixBytes-len(buf))]...)
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return buf, over, err
	}
}

// decode checks one frame and decodes it; it returns (nil, nil) for nothing to do.
func (fr *frameReader) decode(frame []byte) (jsonrpc.Message, *frameError) {
	if d, ok := jsonDepth(frame, fr.maxDepth); !ok {
		return nil, depthError(frame, fr.maxDepth, "")
	} else if d < 0 {
		return nil, &frameError{Code: jsonrpc.CodeParseError, Message: "Parse error: unbalanced JSON"}
	}
	if !json.Valid(frame) {
		return nil, &frameError{Code: jsonrpc.CodeParseError, Message: "Parse error: not valid JSON"}
	}
	switch frame[0] {
	case '{':
	case '[':
		return nil, &frameError{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: batches are not supported"}
	default:
		return nil, &frameError{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: not a JSON object"}
	}
	var head struct {
		JSONRPC *string         `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(frame, &head); err != nil {
		return nil, &frameError{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: " + err.Error()}
	}
	var id json.RawMessage
	if len(head.ID) > 0 && string(head.ID) != "null" {
		var ok bool
		if id, ok = canonicalID(head.ID); !ok {
			return nil, &frameError{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: id must be a string, an integer or null"}
		}
	}
	bad := func(msg string) (jsonrpc.Message, *frameError) {
		return nil, &frameError{ID: id, Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: " + msg}
	}
	if head.JSONRPC == nil || *head.JSONRPC != "2.0" {
		return bad(`"jsonrpc" must be "2.0"`)
	}
	switch {
	case len(head.Method) > 0 && head.Method[0] != '"':
		return bad(`"method" must be a string`)
	case len(head.Method) == 0 && len(head.Result) == 0 && len(head.Error) == 0:
		return bad(`no "method" (nor the "result" or "error" of a response)`)
	}
	msg, err := jsonrpc.DecodeMessage(frame)
	if err != nil {
		return bad(err.Error())
	}
	return msg, nil
}

// depthError is the error answering a frame or body nested deeper than maxDepth, with the
// id of its top-level "id" member (found in one pass, however deep the frame: frameID),
// so that the client's call gets its answer; capName names the setting, if any.
func depthError(frame []byte, maxDepth int, capName string) *frameError {
	msg := fmt.Sprintf("Invalid Request: JSON nested deeper than %d", maxDepth)
	if capName != "" {
		msg += " (" + capName + ")"
	}
	return &frameError{ID: frameID(frame), Code: jsonrpc.CodeInvalidRequest, Message: msg}
}

// jsonDepth returns the deepest nesting of objects and arrays in data (strings skipped),
// false as soon as it passes maxDepth, and -1 when a closing bracket has no opener.
func jsonDepth(data []byte, maxDepth int) (int, bool) {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				return depth, false
			}
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
			if depth < 0 {
				return -1, true
			}
		}
	}
	return deepest, true
}

// canonicalID returns an id as the SDK will echo it: a string, or an integer (the SDK
// carries numeric ids as int64); false for anything else (an object, a fraction, 1e400).
func canonicalID(raw json.RawMessage) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	switch x := v.(type) {
	case string:
		b, err := json.Marshal(x)
		return b, err == nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return strconv.AppendInt(nil, n, 10), true
		}
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return strconv.AppendInt(nil, int64(f), 10), true
		}
	}
	return nil, false
}

// frameID returns the id of a frame, or of the first bytes of one: the value of its
// top-level "id" member (the last, when there are several, as encoding/json reads them),
// in the form canonicalID gives, whatever the frame's nesting. It reads only the members
// of the top-level object, stepping over nested values by counting their brackets (no
// recursion, nothing allocated per level), so one pass over the frame is its whole cost
// (idScanner.steps counts the bytes looked at: each at most twice, where one token ends
// and the next starts). nil when the frame does not start as an object, has no such
// member, or its id is not a string or an integer, or is cut off.
func frameID(frame []byte) json.RawMessage {
	sc := idScanner{data: frame}
	return sc.id()
}

// idScanner is frameID's scanner over data; steps counts the bytes it has looked at.
type idScanner struct {
	data  []byte
	pos   int
	steps int
}

// id scans the top-level members for "id" (see frameID).
func (s *idScanner) id() json.RawMessage {
	var id json.RawMessage
	if !s.skipSpace() || s.data[s.pos] != '{' {
		return nil
	}
	s.pos++
	for {
		if !s.skipSpace() || s.data[s.pos] != '"' {
			return id // '}', the end of the data, or not JSON
		}
		start := s.pos
		if !s.skipString() {
			return id
		}
		key := s.data[start:s.pos]
		if !s.skipSpace() || s.data[s.pos] != ':' {
			return id
		}
		s.pos++
		if !s.skipSpace() {
			return id
		}
		start = s.pos
		ok := s.skipValue()
		if isIDKey(key) {
			if !ok {
				return nil // cut inside the id: not known
			}
			id, _ = canonicalID(s.data[start:s.pos])
		}
		if !ok || !s.skipSpace() || s.data[s.pos] != ',' {
			return id
		}
		s.pos++
	}
}

// skipSpace steps over JSON white space; false at the end of the data.
func (s *idScanner) skipSpace() bool {
	for ; s.pos < len(s.data); s.pos++ {
		s.steps++
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
		default:
			return true
		}
	}
	return false
}

// skipString steps over the string that starts at pos; false when it is not closed.
func (s *idScanner) skipString() bool {
	escaped := false
	for s.pos++; s.pos < len(s.data); s.pos++ {
		s.steps++
		switch b := s.data[s.pos]; {
		case escaped:
			escaped = false
		case b == '\\':
			escaped = true
		case b == '"':
			s.pos++
			return true
		}
	}
	return false
}

// skipValue steps over the value that starts at pos: a string, an object or array (by
// counting brackets outside strings, however deep), or a literal, which must be followed
// by a delimiter (a literal at the end of the data may be cut: 12 of 123). False when the
// value does not end within the data.
func (s *idScanner) skipValue() bool {
	switch s.data[s.pos] {
	case '"':
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.pos < len(s.data) {
			s.steps++
			switch s.data[s.pos] {
			case '"':
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					s.pos++
					return true
				}
			}
			s.pos++
		}
		return false
	}
	for ; s.pos < len(s.data); s.pos++ {
		s.steps++
		switch s.data[s.pos] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return true
		}
	}
	return false
}

// isIDKey reports whether key, a JSON string with its quotes, is "id" (escapes too).
func isIDKey(key []byte) bool {
	if string(key) == `"id"` {
		return true
	}
	if len(key) > 16 || !bytes.ContainsRune(key, '\\') {
		return false
	}
	var k string
	return json.Unmarshal(key, &k) == nil && k == "id"
}
