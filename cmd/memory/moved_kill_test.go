package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory"
)

// The moved-ids kill test (issue 39, item 2): 40 files of 20 documents each; from one
// version to the next every id moves to another file (version v puts the documents of
// group (k+v) mod 40 in file k), so that, read in order, the first file's ids of the
// earlier version are stored again only in the last file. `memory index --batch 20` is
// killed (SIGKILL) at points spread over the run, chosen by its acknowledgements; after
// each kill the store must hold all 800 ids, each in its earlier or its new version.

const (
	movedFiles   = 40
	movedPerFile = 20
)

// movedKillsEnv sets the number of kills of TestReindexMovedIDsKill (default 10).
const movedKillsEnv = "MEMORY_KILLS"

// movedID is the id of document j of group g.
func movedID(g, j int) string { return fmt.Sprintf("d%02d_%02d", g, j) }

// writeMoved writes version v of the moved-ids corpus under dir and returns id -> text.
func writeMoved(t testing.TB, dir string, v int) map[string]string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for k := range movedFiles {
		g := (k + v) % movedFiles
		var b strings.Builder
		for j := range movedPerFile {
			id := movedID(g, j)
			text := fmt.Sprintf("group %d document %d of version%d about kittiwakes in file %d", g, j, v, k)
			want[id] = text
			line, _ := json.Marshal(map[string]string{"id": id, "text": text})
			b.Write(append(line, '\n'))
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.jsonl", k)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

// checkMoved checks the store after a run that indexed next over prev (id -> text): the
// count is 800 and every id is there (Get), holding its text of prev or of next (next only
// when done). It returns the contents and how many ids are absent (each also an error).
func checkMoved(t *testing.T, run, store string, prev, next map[string]string, done bool) (map[string]string, int) {
	t.Helper()
	m, err := memory.OpenExisting(store)
	if err != nil {
		t.Fatalf("%s: the store does not open: %v", run, err)
	}
	defer m.Close()
	ctx := context.Background()
	n, err := m.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(next) {
		t.Errorf("%s: count %d, want %d", run, n, len(next))
	}
	got := map[string]string{}
	var absent []string
	for id, text := range next {
		d, err := m.Get(ctx, id)
		if errors.Is(err, memory.ErrNotFound) {
			absent = append(absent, id)
			continue
		}
		if err != nil {
			t.Fatalf("%s: get %s: %v", run, id, err)
		}
		got[id] = d.Text
		if d.Text != text && (done || d.Text != prev[id]) {
			t.Fatalf("%s: %s holds %q, want %q (or, before it finished, %q)", run, id, d.Text, text, prev[id])
		}
	}
	if len(absent) > 0 {
		t.Errorf("%s: %d of %d ids absent, e.g. %v", run, len(absent), len(next), absent[:min(len(absent), 5)])
	}
	return got, len(absent)
}

// TestReindexMovedIDsKill kills `memory index --batch 20` re-indexing a corpus whose ids
// all move to other files (10 kills; MEMORY_KILLS=50 for the long run): after each kill
// no id is absent.
func TestReindexMovedIDsKill(t *testing.T) {
	kills := 10
	if s := os.Getenv(movedKillsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive number", movedKillsEnv, s)
		}
		kills = n
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	root := t.TempDir()
	in, store := filepath.Join(root, "in"), filepath.Join(root, "store")
	args := []string{"index", "--store", store, "--batch", strconv.Itoa(movedPerFile), in}
	writeMoved(t, in, 0)
	if _, _, _, code, errs := killRun(t, args, -1); code != 0 {
		t.Fatalf("first index: exit %d\n%s", code, errs)
	}
	// An uninterrupted run moving every id: the store holds the new version, and the
	// acknowledgements it writes are the points to kill at.
	next := writeMoved(t, in, 1)
	_, acks, _, code, errs := killRun(t, args, -1)
	if code != 0 {
		t.Fatalf("re-index: exit %d\n%s", code, errs)
	}
	prev, _ := checkMoved(t, "uninterrupted re-index", store, nil, next, true)
	killed, absent := 0, 0
	for i, at := range killPoints(rng, kills, acks) {
		next := writeMoved(t, in, i+2)
		acked, _, exited, code, errs := killRun(t, args, at)
		if exited && code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i, code, errs)
		}
		if !exited {
			killed++
		}
		run := fmt.Sprintf("run %d (seed %d, killed at acknowledgement %d of %d, %d documents acknowledged, exited %v)", i, seed, at, acks, acked, exited)
		var a int
		prev, a = checkMoved(t, run, store, prev, next, exited)
		absent += a
	}
	// Run to the end, the store holds the last version whole.
	last := writeMoved(t, in, kills+2)
	if _, _, _, code, errs := killRun(t, args, -1); code != 0 {
		t.Fatalf("last re-index: exit %d\n%s", code, errs)
	}
	checkMoved(t, "last re-index", store, prev, last, true)
	t.Logf("%d runs moving every id (%d acknowledgements each): %d killed, %d finished first; %d absent ids after the kills", kills, acks, killed, kills-killed, absent)
	if killed < kills/2 {
		t.Fatalf("only %d of %d runs were killed: the kill points are wrong", killed, kills)
	}
}

// TestReindexMovedIDsDefaultFlags moves ids between sources across the splits that default
// flags make (issue 39, item 2): more than 10,000 documents (two writes) and more than
// 1,000 sources (the cap of one write's sources before). The re-index is stopped after its
// first write (its context ends, as on Ctrl-C, when the first acknowledgement is written):
// no id is absent then, and running it again stores the new version whole.
func TestReindexMovedIDsDefaultFlags(t *testing.T) {
	ackEveryWrite()
	cases := []struct {
		name         string
		files, lines int
	}{
		{"12,000 documents in 2 files", 2, 6000},
		{"1,001 sources", 1001, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in, store := filepath.Join(dir, "in"), filepath.Join(dir, "store")
			// Version v puts the documents of group (k+v) mod files in file k.
			write := func(v int) map[string]string {
				want := map[string]string{}
				for k := range tc.files {
					g := (k + v) % tc.files
					var b strings.Builder
					for j := range tc.lines {
						id := fmt.Sprintf("g%04d-%05d", g, j)
						text := fmt.Sprintf("group %d line %d of version%d about shearwaters", g, j, v)
						want[id] = text
						line, _ := json.Marshal(map[string]string{"id": id, "text": text})
						b.Write(append(line, '\n'))
					}
					writeFile(t, filepath.Join(in, fmt.Sprintf("f%04d.jsonl", k)), b.String())
				}
				return want
			}
			write(0)
			mustCLI(t, 0, "index", "--store", store, in)
			next := write(1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errw := &cancelOnWrite{trigger: "indexing: ", cancel: cancel}
			if code := runMain(ctx, []string{"index", "--store", store, in}, io.Discard, errw); code != 1 {
				t.Fatalf("stopped re-index: exit %d, want 1\n%s", code, errw.buf.String())
			}
			got, n := storeContents(t, store)
			if n != len(next) || len(got) != len(next) {
				t.Errorf("after a re-index stopped after its first write: count %d, %d documents, want %d\n%s", n, len(got), len(next), errw.buf.String())
			}
			absent := 0
			for id := range next {
				if _, ok := got[id]; !ok {
					absent++
				}
			}
			if absent > 0 {
				t.Fatalf("%d of %d ids absent after a re-index stopped after its first write", absent, len(next))
			}
			mustCLI(t, 0, "index", "--store", store, in)
			if got, _ := storeContents(t, store); !sameContent(got, next) {
				t.Fatal("the re-index run again does not leave the new version")
			}
		})
	}
}

// TestReindexStaleManySources: a re-index of more sources than one filter names (1,001)
// removes the stale document of each (read by a scan of the whole collection, each
// document's source looked up), and only those.
func TestReindexStaleManySources(t *testing.T) {
	dir := t.TempDir()
	in, store := filepath.Join(dir, "in"), filepath.Join(dir, "store")
	const n = maxReplaceSources + 1
	write := func(lines int) {
		for k := range n {
			var b strings.Builder
			for j := range lines {
				fmt.Fprintf(&b, `{"id": "f%04d-%d", "text": "file %d line %d about fulmars"}`+"\n", k, j, k, j)
			}
			writeFile(t, filepath.Join(in, fmt.Sprintf("f%04d.jsonl", k)), b.String())
		}
	}
	write(2)
	mustCLI(t, 0, "index", "--store", store, in)
	other := filepath.Join(dir, "other.jsonl") // a source this run does not re-index
	writeFile(t, other, `{"id": "o1", "text": "an unrelated note"}`+"\n")
	mustCLI(t, 0, "index", "--store", store, other)
	write(1)
	out, errs := mustCLI(t, 0, "index", "--store", store, in)
	if !strings.Contains(out, fmt.Sprintf("removed %d stale documents of re-indexed sources; collection now holds %d", n, n+1)) {
		t.Fatalf("summary: %s\n%s", out, errs)
	}
	got, _ := storeContents(t, store)
	if _, ok := got["o1"]; !ok {
		t.Fatal("a document of a source the run did not re-index was removed")
	}
	for k := range n {
		if _, ok := got[fmt.Sprintf("f%04d-0", k)]; !ok {
			t.Fatalf("f%04d-0 was removed", k)
		}
		if _, ok := got[fmt.Sprintf("f%04d-1", k)]; ok {
			t.Fatalf("the stale f%04d-1 is still there", k)
		}
	}
}
