package memory

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"
)

// Backup and Export through the writer. A read-only Memory that reads through its writer
// (remote.go) asks it for a backup or an export with a request like any other ("backup",
// or "export" with the collections in "cols"); the answer is one JSON line, as for every
// request (an error, or {"v":1,"stream":"frames"}), then, after a stream line, a sequence
// of frames, each a type byte and a big-endian uint32 length before its payload:
//
//	'd' data: the next bytes of the tar stream or of the JSONL (at most maxFrameBytes)
//	'e' end: a response object (JSON) with the BackupInfo or ExportStats; the stream is whole
//	'x' error: a response object with the writer's error; the stream is not whole
//
// The stream ends the connection: the writer closes it after the end or error frame, and
// the reader after reading one. A reader that stops reading (its context ended, its own
// output failed) closes the connection; the writer's work on it ends when it sees that (a
// read on the connection returns, or a frame cannot be written), releasing its snapshot.
//
// These operations came after the first version of the protocol, so they are a capability
// rather than a new version (a new version would cut every reader off from every older
// writer): a writer names the operations it streams in its hello answer ("caps"). A reader
// does not ask a writer that names none for them (ErrWriterUnsupported), and takes an
// "unknown request" answer for one the same way.

const (
	maxFrameBytes      = 1 << 20         // payload of one frame, as the reader accepts it
	streamChunk        = 256 << 10       // data the writer puts in one frame
	streamWriteTimeout = 2 * time.Minute // a reader that takes no frame for this long is dropped
	frameData          = 'd'
	frameEnd           = 'e'
	frameErr           = 'x'
)

// streamCaps are the streaming operations this writer serves, named in its hello answer.
var streamCaps = []string{"backup", "export"}

// ---- the writer's side ----

// streamOp reports whether op is answered by a stream of frames.
func streamOp(op string) bool { return slices.Contains(streamCaps, op) }

// serveStream answers a backup or export request on c: the stream line, the data frames,
// then an end or error frame. The connection is closed by the caller after it.
func (s *readServer) serveStream(c net.Conn, br *bufio.Reader, bw *bufio.Writer, req *wireReq) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	// The reader sends nothing after its request: a read that returns is the connection
	// closing (the reader gave up), which ends the work.
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		var b [1]byte
		br.Read(b[:])
		cancel()
	}()
	defer func() {
		c.Close() // ends the read above
		<-readDone
	}()

	if err := writeResp(bw, &wireResp{V: remoteProto, Stream: "frames"}); err != nil {
		return
	}
	if err := bw.Flush(); err != nil {
		return
	}
	fw := &frameWriter{c: c, buf: make([]byte, 5, 5+streamChunk)}
	end := &wireResp{V: remoteProto}
	var err error
	switch req.Op {
	case "backup":
		var info BackupInfo
		if info, err = s.m.Backup(ctx, fw); err == nil {
			end.Backup = &info
		}
	case "export":
		var st ExportStats
		if st, err = s.m.Export(ctx, fw, req.Cols...); err == nil {
			end.Export = &st
		}
	}
	if err == nil {
		err = fw.flush()
	}
	if fw.err != nil { // the reader went away: nobody to tell
		return
	}
	kind := byte(frameEnd)
	if err != nil {
		if s.ctx.Err() != nil {
			err = fmt.Errorf("%w: the writer closed the store during the request (%v)", ErrClosed, err)
		}
		kind, end = frameErr, &wireResp{V: remoteProto, Err: toWireErr(err)}
	}
	data, merr := json.Marshal(end)
	if merr != nil {
		kind, data = frameErr, []byte(`{"v":1,"err":{"msg":"memory: encoding the end of the stream"}}`)
	}
	fw.frame(kind, data)
}

// frameWriter cuts what is written to it into data frames of streamChunk bytes on c.
type frameWriter struct {
	c   net.Conn
	buf []byte // a frame being filled: 5 header bytes, then data
	err error  // the first write error on c (the reader gone): every later write fails
}

func (f *frameWriter) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if f.err != nil {
			return n, f.err
		}
		k := min(len(p)-n, cap(f.buf)-len(f.buf))
		f.buf = append(f.buf, p[n:n+k]...)
		if len(f.buf) == cap(f.buf) && f.flush() != nil {
			return n, f.err
		}
		n += k
	}
	return n, nil
}

// flush sends the data buffered as a frame.
func (f *frameWriter) flush() error {
	if f.err == nil && len(f.buf) > 5 {
		f.buf[0] = frameData
		binary.BigEndian.PutUint32(f.buf[1:5], uint32(len(f.buf)-5))
		f.send(f.buf)
		f.buf = f.buf[:5]
	}
	return f.err
}

// frame sends one frame of the given kind (after the data buffered).
func (f *frameWriter) frame(kind byte, payload []byte) error {
	if f.flush() != nil {
		return f.err
	}
	b := make([]byte, 5, 5+len(payload))
	b[0] = kind
	binary.BigEndian.PutUint32(b[1:5], uint32(len(payload)))
	return f.send(append(b, payload...))
}

func (f *frameWriter) send(b []byte) error {
	f.c.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := f.c.Write(b); err != nil {
		f.err = fmt.Errorf("the reader went away: %w", err)
	}
	return f.err
}

// ---- the reader's side ----

// supports reports whether the writer named op among the operations it streams.
func (rc *remoteClient) supports(op string) bool {
	return slices.Contains(rc.caps, op)
}

// unsupported is the error of an operation the writer does not serve.
func (rc *remoteClient) unsupported(op, why string) error {
	return fmt.Errorf("%w: %s of %s through the writer (pid %d): %s", ErrWriterUnsupported, op, rc.dir, rc.pid, why)
}

// stream sends a streaming request and copies the data it answers with to w; it returns
// the end frame's response. The connection is not reused.
func (rc *remoteClient) stream(ctx context.Context, req *wireReq, w io.Writer) (*wireResp, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !rc.supports(req.Op) {
		return nil, rc.unsupported(req.Op, "it names no such operation")
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
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	// netErr is the error of a connection that failed: the context's when it ended the
	// call, else ErrWriterGone.
	netErr := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return rc.gone(err)
	}
	if _, err := c.Write(append(data, '\n')); err != nil {
		return nil, netErr(err)
	}
	br := bufio.NewReaderSize(c, 64<<10)
	line, err := readLine(br, maxResponseBytes)
	if err != nil {
		return nil, netErr(err)
	}
	var head wireResp
	if err := json.Unmarshal(line, &head); err != nil || head.V != remoteProto {
		return nil, rc.gone(fmt.Errorf("a stream line that does not parse (%q)", truncate(line, 200)))
	}
	if head.Err != nil {
		if strings.Contains(head.Err.Msg, "unknown request") || strings.Contains(head.Err.Msg, "unknown field") {
			return nil, rc.unsupported(req.Op, head.Err.Msg)
		}
		return nil, rc.remoteErr(head.Err)
	}
	if head.Stream != "frames" {
		return nil, rc.gone(fmt.Errorf("an answer to %q that is not a stream", req.Op))
	}
	buf := make([]byte, streamChunk)
	var fh [5]byte
	for {
		if _, err := io.ReadFull(br, fh[:]); err != nil {
			return nil, netErr(fmt.Errorf("the stream ended without its end frame: %w", err))
		}
		n := binary.BigEndian.Uint32(fh[1:])
		if n > maxFrameBytes {
			return nil, rc.gone(fmt.Errorf("a frame of %d bytes (at most %d)", n, maxFrameBytes))
		}
		if int(n) > len(buf) {
			buf = make([]byte, n)
		}
		p := buf[:n]
		if _, err := io.ReadFull(br, p); err != nil {
			return nil, netErr(fmt.Errorf("a frame cut short: %w", err))
		}
		switch fh[0] {
		case frameData:
			if _, err := w.Write(p); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, fmt.Errorf("memory: writing what the writer sent: %w", err)
			}
		case frameEnd, frameErr:
			var end wireResp
			if err := json.Unmarshal(p, &end); err != nil {
				return nil, rc.gone(fmt.Errorf("an end frame that does not parse: %v", err))
			}
			if end.Err != nil {
				return nil, rc.remoteErr(end.Err)
			}
			if fh[0] == frameErr {
				return nil, rc.gone(errors.New("an error frame without an error"))
			}
			return &end, nil
		default:
			return nil, rc.gone(fmt.Errorf("a frame of unknown type %q", fh[0]))
		}
	}
}

// remoteErr is the writer's error as the reader returns it (ErrWriterGone when the writer
// is closing).
func (rc *remoteClient) remoteErr(we *wireErr) error {
	e := &remoteError{msg: we.Msg}
	for _, k := range wireKinds {
		for _, name := range we.Kinds {
			if k.name == name {
				e.kinds = append(e.kinds, k.err)
			}
		}
	}
	if errors.Is(e, ErrClosed) {
		return rc.gone(e)
	}
	return e
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// remoteBackup is Backup through the writer.
func (rs readService) remoteBackup(ctx context.Context, w io.Writer) (BackupInfo, error) {
	m := rs.m
	cw := &countWriter{w: w}
	resp, err := m.remote.stream(ctx, &wireReq{Op: "backup"}, cw)
	if re := (*remoteError)(nil); errors.As(err, &re) { // the writer's own, already saying "backup"
		return BackupInfo{Bytes: cw.n}, err
	}
	if err != nil {
		return BackupInfo{Bytes: cw.n}, fmt.Errorf("memory: backup: %w", err)
	}
	if resp.Backup == nil {
		return BackupInfo{Bytes: cw.n}, fmt.Errorf("memory: backup: %w: the writer's end frame has no backup info", ErrWriterGone)
	}
	info := *resp.Backup
	if info.Bytes != cw.n {
		return info, fmt.Errorf("memory: backup: %w: the writer sent %d bytes of a %d-byte archive", ErrWriterGone, cw.n, info.Bytes)
	}
	return info, nil
}

// remoteExport is Export through the writer.
func (rs readService) remoteExport(ctx context.Context, w io.Writer, collections []string) (ExportStats, error) {
	m := rs.m
	resp, err := m.remote.stream(ctx, &wireReq{Op: "export", Cols: collections}, w)
	if err != nil {
		return ExportStats{}, err
	}
	if resp.Export == nil {
		return ExportStats{}, fmt.Errorf("memory: export: %w: the writer's end frame has no counts", ErrWriterGone)
	}
	return *resp.Export, nil
}
