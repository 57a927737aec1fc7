package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
)

// Issue 24: `memory backup` and `memory export` beside `memory serve --mcp` holding the
// store writable, while memory_add calls keep arriving: the backup restores to a store
// that check calls clean and that holds every document acknowledged before the backup
// began; the export of a collection (its documents unchanged meanwhile: the adds go to
// another) imports into a fresh store that answers searches as the writer does.
func TestBackupExportBesideWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	tmp := t.TempDir()
	corpus := writeCorpus(t, tmp, 400)
	src := filepath.Join(tmp, "src")
	mustCLI(t, 0, "index", "--store", src, "--embedder", "hash:32", corpus)
	w := startMCPChild(t, src)

	var acked []string // ids the writer acknowledged before the backup began
	add := func(id string) {
		w.call(t, "tools/call", fmt.Sprintf(`{"name":"memory_add","arguments":{"collection":"inbox","documents":[{"id":%q,"text":"inbox note %s about otters"}]}}`, id, id))
	}
	for i := range 20 {
		id := fmt.Sprintf("pre%02d", i)
		add(id)
		acked = append(acked, id)
	}

	archive := filepath.Join(tmp, "out", "s.tar")
	export := filepath.Join(tmp, "out", "default.jsonl")
	if err := os.Mkdir(filepath.Dir(archive), 0o755); err != nil {
		t.Fatal(err)
	}
	type result struct {
		name           string
		code           int
		stdout, stderr string
		err            error
	}
	results := make(chan result, 2)
	var wg sync.WaitGroup
	for _, args := range [][]string{{"backup", "--store", src, archive}, {"export", "--store", src, "--collection", "default", export}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, errs, err := cliChild(args...)
			results <- result{args[0], code, out, errs, err}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// The adds go on while both run (at least a few, however fast they are).
	during := 0
	for running := true; running || during < 5; during++ {
		add(fmt.Sprintf("during%03d", during))
		select {
		case <-done:
			running = false
		default:
		}
	}
	close(results)
	for r := range results {
		if r.err != nil || r.code != 0 {
			t.Fatalf("memory %s beside the writer: exit %d, %v\n%s", r.name, r.code, r.err, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(archive)); len(entries) != 2 {
		t.Errorf("beside the archive and the export: %v (temporary files left?)", entries)
	}

	// The backup restores to a clean store holding every document acknowledged before it.
	restored := filepath.Join(tmp, "restored")
	mustCLI(t, 0, "restore", archive, "--store", restored, "--check")
	mustCLI(t, 0, "check", "--store", restored)
	rm, err := memory.OpenExisting(restored, memory.ReadOnly(), memory.WithEmbedder(vectorstore.NewHashEmbedder(32)))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range acked {
		if _, err := rm.Collection("inbox").Get(context.Background(), id); err != nil {
			t.Errorf("document %s, acknowledged before the backup began, is not in the restored store: %v", id, err)
		}
	}
	if n, err := rm.Collection(memory.DefaultCollection).Count(context.Background()); err != nil || n != 400 {
		t.Errorf("restored default collection: %d documents (%v), want 400", n, err)
	}
	rm.Close()

	// The export imports into a fresh store that answers as the writer does (the CLI's
	// searches on src read through it).
	imported := filepath.Join(tmp, "imported")
	mustCLI(t, 0, "import", "--store", imported, export)
	sameSearches(t, src, imported)
	t.Logf("%d adds during the backup and the export", during)
}

// The writer closing (or the reader canceling) in the middle of a backup or export taken
// through it: the CLI's output path gets nothing (no partial OUT, no temporary file), and
// the error is ErrWriterGone (context.Canceled).
func TestBackupThroughWriterCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   string
		want error
	}{
		{"writer gone/backup", "backup", memory.ErrWriterGone},
		{"writer gone/export", "export", memory.ErrWriterGone},
		{"cancel/backup", "backup", context.Canceled},
		{"cancel/export", "export", context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			w, err := memory.Open(dir, memory.WithEmbedder(vectorstore.NewHashEmbedder(16)))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var docs []memory.Document
			for i := range 3000 {
				docs = append(docs, memory.Document{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("filler %d ", i) + strings.Repeat("lorem ipsum dolor ", 80)})
			}
			if err := w.Add(context.Background(), docs...); err != nil {
				t.Fatal(err)
			}
			r, err := openForCopy(dir, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			cut := func() {
				if tc.want == context.Canceled {
					cancel()
					return
				}
				if err := w.Close(); err != nil {
					t.Errorf("the writer's Close: %v", err)
				}
			}
			outDir := t.TempDir()
			out := filepath.Join(outDir, "OUT")
			err = writeOutput(out, nil, func(f io.Writer) error {
				sink := writerFunc(func(p []byte) (int, error) {
					once.Do(cut)
					return f.Write(p)
				})
				var err error
				if tc.op == "backup" {
					_, err = r.Backup(ctx, sink)
				} else {
					_, err = r.Export(ctx, sink)
				}
				return err
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
			}
			if entries, _ := os.ReadDir(outDir); len(entries) != 0 {
				t.Errorf("left after the failed %s: %v", tc.op, entries)
			}
		})
	}
}

// writerFunc is a function as an io.Writer.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
