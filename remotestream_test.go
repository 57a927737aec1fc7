package memory

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/memory/vectorstore"
)

// docLines is an export's document lines (its header lines carry the time of the export).
func docLines(t *testing.T, export []byte) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(export)), "\n") {
		if !strings.HasPrefix(l, `{"memory_export":`) {
			out = append(out, l)
		}
	}
	return out
}

// A read-only store beside a writer backs up and exports through it: the archive restores
// to the writer's documents, the export is the writer's, a collection filter is passed
// along, and the writer's errors come back typed.
func TestRemoteBackupExport(t *testing.T) {
	dir := t.TempDir()
	w, r := remotePair(t, dir)

	var arch bytes.Buffer
	info, err := r.Backup(bg, &arch)
	if err != nil {
		t.Fatalf("backup through the writer: %v", err)
	}
	if info.Bytes != int64(arch.Len()) || info.StoreBytes <= 0 || info.Documents != len(roDocs())+2 {
		t.Errorf("backup info %+v, archive of %d bytes, want %d documents", info, arch.Len(), len(roDocs())+2)
	}
	rdir := filepath.Join(t.TempDir(), "restored")
	if err := Restore(bg, &arch, rdir); err != nil {
		t.Fatalf("restore: %v", err)
	}
	rs := openT(t, rdir, WithEmbedder(vectorstore.NewHashEmbedder(16)))
	for _, col := range []string{DefaultCollection, "other"} {
		n1, err1 := w.Collection(col).Count(bg)
		n2, err2 := rs.Collection(col).Count(bg)
		if err1 != nil || err2 != nil || n1 != n2 {
			t.Errorf("collection %s: writer %d (%v), restored %d (%v)", col, n1, err1, n2, err2)
		}
	}
	rs.Close()

	for _, cols := range [][]string{nil, {"other"}, {"other", DefaultCollection}} {
		var local, remote bytes.Buffer
		stw, err := w.Export(bg, &local, cols...)
		if err != nil {
			t.Fatal(err)
		}
		str, err := r.Export(bg, &remote, cols...)
		if err != nil {
			t.Fatalf("export %v through the writer: %v", cols, err)
		}
		if stw != str {
			t.Errorf("export %v: stats %+v through the writer, %+v in it", cols, str, stw)
		}
		if a, b := docLines(t, remote.Bytes()), docLines(t, local.Bytes()); strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("export %v through the writer differs from the writer's own:\n%q\n%q", cols, a, b)
		}
	}
	if _, err := r.Export(bg, io.Discard, "nope"); !errors.Is(err, ErrCollectionNotFound) {
		t.Errorf("export of a missing collection through the writer: %v, want ErrCollectionNotFound", err)
	}
	if res, err := r.Search(bg, "language", WithMode(BM25)); err != nil || len(res) == 0 { // the connection pool still serves
		t.Errorf("search after the streams: %v, %v", res, err)
	}
}

// bigRemotePair is remotePair with some megabytes more in the store, so that a backup
// stream outlasts the socket's buffers.
func bigRemotePair(t *testing.T, dir string) (w, r *Memory) {
	t.Helper()
	w, r = remotePair(t, dir)
	var docs []Document
	for i := range 3000 {
		docs = append(docs, Document{ID: fmt.Sprintf("big%d", i), Text: fmt.Sprintf("filler %d ", i) + strings.Repeat("lorem ipsum dolor ", 80)})
	}
	if err := w.Add(bg, docs...); err != nil {
		t.Fatal(err)
	}
	return w, r
}

// stallWriter calls first on the first Write (the stream has begun), then passes writes on.
type stallWriter struct {
	once  sync.Once
	first func()
	w     io.Writer
}

func (s *stallWriter) Write(p []byte) (int, error) {
	s.once.Do(s.first)
	return s.w.Write(p)
}

// The writer closing its store in the middle of a backup or export stream: the reader's
// call fails with ErrWriterGone (not a short archive taken for a whole one), and the
// writer's Close does not wait on the reader.
func TestRemoteStreamWriterGone(t *testing.T) {
	for _, op := range []string{"backup", "export"} {
		t.Run(op, func(t *testing.T) {
			w, r := bigRemotePair(t, t.TempDir())
			closed := make(chan error, 1)
			sink := &stallWriter{w: io.Discard, first: func() {
				go func() { closed <- w.Close() }()
				select {
				case err := <-closed:
					closed <- err
				case <-time.After(20 * time.Second):
					t.Error("the writer's Close waited on a reader that had stopped reading")
				}
			}}
			var err error
			if op == "backup" {
				_, err = r.Backup(bg, sink)
			} else {
				_, err = r.Export(bg, sink)
			}
			if !errors.Is(err, ErrWriterGone) {
				t.Fatalf("%s while the writer closed: %v, want ErrWriterGone", op, err)
			}
			if err := <-closed; err != nil {
				t.Errorf("the writer's Close: %v", err)
			}
		})
	}
}

// A reader that cancels in the middle of a stream gets context.Canceled; the writer's side
// of it ends (its snapshot released: the writer goes on writing and closes at once), and
// the writer serves the next backup whole.
func TestRemoteStreamCancel(t *testing.T) {
	for _, op := range []string{"backup", "export"} {
		t.Run(op, func(t *testing.T) {
			w, r := bigRemotePair(t, t.TempDir())
			ctx, cancel := context.WithCancel(bg)
			sink := &stallWriter{w: io.Discard, first: cancel}
			var err error
			if op == "backup" {
				_, err = r.Backup(ctx, sink)
			} else {
				_, err = r.Export(ctx, sink)
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("%s canceled mid-stream: %v, want context.Canceled", op, err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				w.srv.mu.Lock()
				n := len(w.srv.conns)
				w.srv.mu.Unlock()
				if n <= 1 { // the pool's idle connection may stay
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the writer still serves %d connections after the reader canceled", n)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := w.Add(bg, Document{ID: "after", Text: "written after the canceled stream"}); err != nil {
				t.Fatal(err)
			}
			var arch bytes.Buffer
			if _, err := r.Backup(bg, &arch); err != nil {
				t.Fatalf("backup after a canceled one: %v", err)
			}
			if err := Restore(bg, &arch, filepath.Join(t.TempDir(), "r")); err != nil {
				t.Fatalf("restore of the backup after a canceled one: %v", err)
			}
			done := make(chan error, 1)
			go func() { done <- w.Close() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the writer's Close hangs after a canceled stream")
			}
		})
	}
}

// Writers that do not serve the streams, or serve them badly (stand-ins on the socket):
// an older writer (no "caps" in its hello, or "unknown request" for the operation) is
// ErrWriterUnsupported, with nothing sent to it that it cannot read; a stream cut short or
// malformed is ErrWriterGone.
func TestRemoteStreamWriters(t *testing.T) {
	cases := []struct {
		name  string
		hello string
		reply string // what the stand-in answers the backup request with, then it closes
		want  error
	}{
		{"no caps", `{"v":1,"pid":1}`, "", ErrWriterUnsupported},
		{"unknown op", `{"v":1,"pid":1,"caps":["backup","export"]}`, `{"v":1,"err":{"msg":"memory: invalid option: unknown request \"backup\"","kinds":["invalid_option"]}}` + "\n", ErrWriterUnsupported},
		{"cut short", `{"v":1,"pid":1,"caps":["backup","export"]}`, `{"v":1,"stream":"frames"}` + "\nd\x00\x00\x00\x04ab", ErrWriterGone},
		{"no end frame", `{"v":1,"pid":1,"caps":["backup","export"]}`, `{"v":1,"stream":"frames"}` + "\nd\x00\x00\x00\x02ab", ErrWriterGone},
		{"huge frame", `{"v":1,"pid":1,"caps":["backup","export"]}`, `{"v":1,"stream":"frames"}` + "\nd\xff\xff\xff\xff", ErrWriterGone},
		{"unknown frame", `{"v":1,"pid":1,"caps":["backup","export"]}`, `{"v":1,"stream":"frames"}` + "\nq\x00\x00\x00\x00", ErrWriterGone},
		{"not a stream", `{"v":1,"pid":1,"caps":["backup","export"]}`, `{"v":1,"n":3}` + "\n", ErrWriterGone},
		{"error frame", `{"v":1,"pid":1,"caps":["backup","export"]}`, `{"v":1,"stream":"frames"}` + "\nx\x00\x00\x00\x38" + `{"v":1,"err":{"msg":"disk on fire","kinds":["corrupt"]}}`, ErrCorrupt},
	}
	dir := t.TempDir()
	w := openT(t, dir)
	if err := w.Add(bg, roDocs()...); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			asked := make(chan string, 4)
			standInWriter(t, dir, tc.hello, func(c net.Conn, line string) {
				asked <- line
				c.Write([]byte(tc.reply))
			})
			r, err := Open(dir, ReadOnly())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var out bytes.Buffer
			if _, err := r.Backup(bg, &out); !errors.Is(err, tc.want) {
				t.Fatalf("backup: %v, want %v", err, tc.want)
			}
			if tc.name == "no caps" {
				select {
				case l := <-asked:
					t.Errorf("a writer naming no streams was asked %q", l)
				default:
				}
			}
		})
	}
}

// A backup through the writer taken during 1,000 concurrent Adds restores to a store that
// Check calls clean and that holds every document acknowledged before the backup began.
func TestRemoteBackupDuringAdds(t *testing.T) {
	w, r := remotePair(t, t.TempDir())
	var mu sync.Mutex
	var acked []string
	var wg sync.WaitGroup
	started := make(chan struct{})
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 125 {
				id := fmt.Sprintf("add-%d-%d", g, i)
				if err := w.Add(bg, Document{ID: id, Text: fmt.Sprintf("concurrent note %d of writer %d", i, g)}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, id)
				n := len(acked)
				mu.Unlock()
				if n == 200 {
					close(started)
				}
			}
		}()
	}
	<-started
	mu.Lock()
	before := append([]string(nil), acked...)
	mu.Unlock()
	var arch bytes.Buffer
	info, err := r.Backup(bg, &arch)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	rdir := filepath.Join(t.TempDir(), "restored")
	if err := Restore(bg, &arch, rdir); err != nil {
		t.Fatal(err)
	}
	rs := openT(t, rdir, WithEmbedder(vectorstore.NewHashEmbedder(16)))
	defer rs.Close()
	rep, err := rs.Check(bg, false)
	if err != nil || !rep.OK() {
		t.Fatalf("check of the restored store: %+v, %v", rep, err)
	}
	for _, id := range before {
		if _, err := rs.Get(bg, id); err != nil {
			t.Errorf("%s, acknowledged before the backup began, is not restored: %v", id, err)
		}
	}
	n, _ := rs.Count(bg)
	t.Logf("%d adds acknowledged before the backup, %d documents in it (%d restored in the default collection), 1000 in all", len(before), info.Documents, n)
}

// standInWriter listens on a unix socket in place of dir's writer and names it in dir's
// lock file: it answers each connection's hello with hello, hands the first other request
// line to answer and then closes the connection. The listener closes with t.
func standInWriter(t *testing.T, dir, hello string, answer func(c net.Conn, line string)) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "x.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if strings.Contains(line, `"hello"`) {
						c.Write([]byte(hello + "\n"))
						continue
					}
					answer(c, line)
					return
				}
			}()
		}
	}()
	if err := writeLockInfo(dir, lockInfo{PID: os.Getpid(), Socket: sock, Proto: remoteProto, Mode: "writer"}); err != nil {
		t.Fatal(err)
	}
}
