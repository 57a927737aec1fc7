package bm25

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// TestWriteBlockMetaAtClose: a writer's Close leaves every segment a complete sidecar (the
// version 2 head) holding the metadata of each list of at least blockMetaMinPostings
// postings over several blocks, and keeps the records queries had appended; a read-only
// open then answers queries on those terms without computing any list's metadata, with
// the exhaustive path's hits; a second Close rewrites nothing, and a stale temporary file
// of a killed writer is removed.
func TestWriteBlockMetaAtClose(t *testing.T) {
	withBodyInZap(t) // (the sidecars of the earlier layout)
	withChunkMode(t, 16)
	defer func(n uint64) { blockMetaMinPostings = n }(blockMetaMinPostings)
	blockMetaMinPostings = 200
	b, dir := openRandomOnDisk(t, 1500)
	ctx := context.Background()
	if _, err := b.Search(ctx, "insulin", 10, nil); err != nil { // a record appended by a query
		t.Fatal(err)
	}
	// The terms that must be recorded: lists of >= 200 postings over several blocks.
	var long []string
	if err := b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		for _, ss := range snap.Segments() {
			dict, err := ss.Segment().Dictionary(bodyField)
			if err != nil {
				return err
			}
			it := dict.AutomatonIterator(nil, nil, nil)
			var pl segment.PostingsList
			for {
				de, err := it.Next()
				if err != nil || de == nil {
					return err
				}
				if pl, err = dict.PostingsList([]byte(de.Term), nil, pl); err != nil {
					return err
				}
				if pl.Count() >= blockMetaMinPostings {
					long = append(long, de.Term)
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(long) < 5 {
		t.Fatalf("only %d long lists: %v", len(long), long)
	}
	stale := filepath.Join(dir, "store", atomicTemp("000000000001.zap"+sidecarExt))
	if err := os.WriteFile(stale, []byte("half a sidecar"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a killed writer's temporary sidecar is still there: %v", err)
	}
	cars, _ := filepath.Glob(filepath.Join(dir, "store", "*.zap"+sidecarExt))
	zaps, _ := filepath.Glob(filepath.Join(dir, "store", "*.zap"))
	if len(cars) == 0 || len(cars) != len(zaps) {
		t.Fatalf("%d sidecars for %d segments", len(cars), len(zaps))
	}
	recorded := map[string]bool{}
	for _, c := range cars {
		data, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, sidecarMagicComplete) {
			t.Fatalf("%s: not a complete sidecar (%q)", c, data[:5])
		}
		for off := sidecarHeader; off < len(data); {
			term, _, n := parseSidecarRecord(data[off:])
			if n == 0 {
				t.Fatalf("%s: a damaged record at %d", c, off)
			}
			recorded[term] = true
			off += n
		}
	}
	if !recorded["insulin"] {
		t.Error("the record a query appended was dropped")
	}
	ro, err := OpenWith(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, term := range long {
		if !recorded[term] {
			t.Errorf("no record of %q", term)
			continue
		}
		got, err := ro.Search(ctx, term, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		ro.SetExhaustive(true)
		want, err := ro.Search(ctx, term, 10, nil)
		ro.SetExhaustive(false)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, term, got, want)
	}
	if n := ro.postings.metaPasses.Load(); n != 0 {
		t.Errorf("a read-only open computed the metadata of %d lists the sidecars hold", n)
	}
	if err := ro.Close(); err != nil { // a writer waits for readers' locks
		t.Fatal(err)
	}
	before := map[string][]byte{}
	for _, c := range cars {
		before[c], _ = os.ReadFile(c)
	}
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cars {
		if now, _ := os.ReadFile(c); !bytes.Equal(now, before[c]) {
			t.Errorf("%s rewritten by a Close with nothing new", c)
		}
	}
}

// atomicTemp is a temporary file name atomicfile would write name through.
func atomicTemp(name string) string { return "." + name + ".tmp12345" }
