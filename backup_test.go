package memory

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/vectorstore"
)

// checkClean fails t unless every entry of a check of the store in dir (opened read-only,
// as `memory check` does) agrees with the store of record without a repair.
func checkClean(t *testing.T, dir string, opts ...Option) {
	t.Helper()
	m, err := Open(dir, append(opts, ReadOnly())...)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rep, err := m.Check(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, ix := range rep.Indexes {
		if len(ix.Problems) > 0 || ix.Repaired {
			t.Errorf("check of the restored store: %v", ix)
		}
	}
	if len(rep.Indexes) == 0 {
		t.Error("check of the restored store reported nothing")
	}
}

// TestBackupDuringWrites backs a store up while 1,000 concurrent Adds run (and searches):
// the backup restores to a store that check calls clean and that holds every document
// acknowledged before the backup began, each as it was written (issue 24, point 2).
func TestBackupDuringWrites(t *testing.T) {
	ctx := context.Background()
	emb := vectorstore.NewHashEmbedder(32)
	src := filepath.Join(t.TempDir(), "src")
	m, err := Open(src, WithEmbedder(emb), WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	text := func(id string) string { return "note " + id + " about backups and the quick brown fox" }
	for i := range 100 {
		id := fmt.Sprintf("pre%03d", i)
		if err := m.Collection("notes").Add(ctx, Document{ID: id, Text: text(id), Metadata: map[string]any{"n": float64(i)}}); err != nil {
			t.Fatal(err)
		}
	}

	const writers = 1000
	var mu sync.Mutex
	acked := map[string]bool{}
	var nacked atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			id := fmt.Sprintf("c%04d", i)
			if err := m.Add(ctx, Document{ID: id, Title: "t" + id, Text: text(id), Source: "src/" + id}); err != nil {
				t.Errorf("add %s: %v", id, err)
				return
			}
			mu.Lock()
			acked[id] = true
			mu.Unlock()
			nacked.Add(1)
		}()
	}
	stop := make(chan struct{})
	var swg sync.WaitGroup
	swg.Add(1)
	go func() { // searches beside the writes and the backup
		defer swg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := m.Search(ctx, "quick fox", TopK(5)); err != nil {
				t.Errorf("search: %v", err)
				return
			}
		}
	}()
	close(start)
	for nacked.Load() < 200 {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	before := make([]string, 0, len(acked))
	for id := range acked {
		before = append(before, id)
	}
	mu.Unlock()
	var archive bytes.Buffer
	info, err := m.Backup(ctx, &archive)
	if err != nil {
		t.Fatal(err)
	}
	during := nacked.Load()
	wg.Wait()
	close(stop)
	swg.Wait()
	if during >= writers {
		t.Logf("every Add was acknowledged before the backup ended (a slow backup); the test still checks the acknowledged ones")
	}
	t.Logf("backup of %d documents (%d bytes, store.db %d) taken with %d of %d Adds acknowledged before it began, %d when it ended",
		info.Documents, info.Bytes, info.StoreBytes, len(before), writers, during)
	if int64(archive.Len()) != info.Bytes {
		t.Fatalf("Backup says %d bytes, wrote %d", info.Bytes, archive.Len())
	}

	dst := filepath.Join(t.TempDir(), "restored")
	if err := Restore(ctx, bytes.NewReader(archive.Bytes()), dst); err != nil {
		t.Fatal(err)
	}
	// The first writable open builds the derived indexes; then the store checks clean.
	r, err := Open(dst, WithEmbedder(emb))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range before {
		d, err := r.Get(ctx, id)
		if err != nil {
			t.Fatalf("%s was acknowledged before the backup began: %v", id, err)
		}
		if d.Text != text(id) || d.Title != "t"+id || d.Source != "src/"+id {
			t.Fatalf("%s restored as %+v", id, d)
		}
		if d.Embedding == nil {
			t.Fatalf("%s restored without its vector", id)
		}
	}
	if n := memtest.Count(t, r.Collection("notes")); n != 100 {
		t.Fatalf("collection notes: %d documents restored, want 100", n)
	}
	n := memtest.Count(t, r)
	if n < len(before) || n > writers || n != info.Documents-100 {
		t.Fatalf("%d documents restored in the default collection (backup counted %d with notes' 100; %d acknowledged before it)", n, info.Documents, len(before))
	}
	res, err := r.Search(ctx, "note "+before[0], TopK(3), WithMode(Dense))
	if err != nil || len(res) == 0 {
		t.Fatalf("dense search of the restored store: %v %v", res, err)
	}
	if _, err := r.Check(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	checkClean(t, dst, WithEmbedder(emb))
}

// TestRestoreDamaged feeds Restore damaged, truncated and foreign archives: each is
// ErrBadBackup, and nothing is left at the target or beside it.
func TestRestoreDamaged(t *testing.T) {
	ctx := context.Background()
	m := openT(t, filepath.Join(t.TempDir(), "src"), WithEmbedder(vectorstore.NewHashEmbedder(16)))
	for i := range 30 {
		if err := m.Add(ctx, Document{ID: fmt.Sprint(i), Text: fmt.Sprintf("document %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := m.Backup(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	// Where the store.db entry's bytes are: after its 512-byte tar header (and a PAX one).
	dbAt := bytes.Index(good, []byte("store.db"))
	if dbAt < 0 {
		t.Fatal("no store.db entry")
	}
	flip := func(at int) []byte {
		b := bytes.Clone(good)
		b[at] ^= 0x40
		return b
	}
	manifestAt := bytes.Index(good, []byte(`"format"`))
	sumsAt := bytes.LastIndex(good, []byte(`"sha256"`)) + 12
	cases := []struct {
		name    string
		archive []byte
	}{
		{"empty", nil},
		{"not a tar", []byte(strings.Repeat("not an archive ", 100))},
		{"truncated in the header entry", good[:700]},
		{"truncated in store.db", good[:len(good)/2]},
		{"truncated before the checksums", good[:sumsAt-200]},
		{"truncated in the checksums", good[:len(good)-1024-100]},
		{"a byte of store.db flipped", flip(len(good) / 2)},
		{"a byte of the manifest flipped", flip(manifestAt + 2)},
		{"a checksum changed", flip(sumsAt)},
		{"a tar header changed", flip(dbAt)},
		{"another archive", tarOf(t, map[string]string{"hello.txt": "hi"})},
		{"entries after the checksums", append(bytes.Clone(good[:len(good)-1024]), tarOf(t, map[string]string{"extra": "x"})...)},
	}
	parent := t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(parent, "restored")
			err := Restore(ctx, bytes.NewReader(tc.archive), dst)
			if !errors.Is(err, ErrBadBackup) {
				t.Fatalf("Restore: %v, want ErrBadBackup", err)
			}
			entries, _ := os.ReadDir(parent)
			if len(entries) > 0 {
				t.Fatalf("left behind: %v", entries)
			}
		})
	}
	// The good archive restores; a target that is not empty is refused.
	dst := filepath.Join(parent, "restored")
	if err := Restore(ctx, bytes.NewReader(good), dst); err != nil {
		t.Fatal(err)
	}
	if err := Restore(ctx, bytes.NewReader(good), dst); !errors.Is(err, ErrRestoreTarget) {
		t.Fatalf("restore over a store: %v, want ErrRestoreTarget", err)
	}
	r := openT(t, dst, WithEmbedder(vectorstore.NewHashEmbedder(16)))
	if n := memtest.Count(t, r); n != 30 {
		t.Fatalf("restored %d documents, want 30", n)
	}
	// An empty directory is a target too.
	empty := filepath.Join(parent, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Restore(ctx, bytes.NewReader(good), empty); err != nil {
		t.Fatalf("restore into an empty directory: %v", err)
	}
	if r := openT(t, empty, WithEmbedder(vectorstore.NewHashEmbedder(16))); memtest.Count(t, r) != 30 {
		t.Fatalf("restored into an empty directory: %d documents", memtest.Count(t, r))
	}
}

// tarOf is a tar archive of the given files.
func tarOf(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
