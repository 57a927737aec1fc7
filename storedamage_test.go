package memory

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/store"
)

// The tests here damage store.db one byte at a time, where bbolt's pages are most
// fragile (the element headers and page headers of the docs and vecs buckets' branch and
// leaf pages) and at seeded random offsets, and hold the damaged copy to what the tamper
// suite holds any damage to (TestTamper: each answer the undamaged store's or a typed
// error, never a crash, never a hang), and a read-only check of it first (bbolt's own
// check used to walk such pages on a goroutine of its own and end the process: issue 39,
// point 3). Each copy is probed in a child process, so a crash is one failed case.

// storeFlip is one byte of store.db flipped: the bits mask at offset off.
type storeFlip struct {
	name string
	off  int64
	mask byte
}

// storeFlips lists the flips made to the store.db at db: in the element headers (the
// first and the last element's) and page headers of a branch and a leaf page of each
// collection's docs and vecs buckets, and random seeded ones over the pages in use
// (MEMORY_STORE_FLIPS sets how many, 16 by default; MEMORY_STORE_FLIPS_SEED the seed).
// full flips every field of every element of every such page (MEMORY_STORE_FLIPS_FULL).
func storeFlips(t *testing.T, db string, full bool) []storeFlip {
	t.Helper()
	pages, err := store.Pages(db)
	if err != nil {
		t.Fatal(err)
	}
	var flips []storeFlip
	at := func(name string, off int64, mask byte) {
		flips = append(flips, storeFlip{name: name, off: off, mask: mask})
	}
	branches, leaves := map[string]int{}, map[string]int{}
	for _, p := range pages {
		if !strings.HasSuffix(p.Bucket, "/docs") && !strings.HasSuffix(p.Bucket, "/vecs") {
			continue
		}
		what := fmt.Sprintf("%s-page%d", strings.ReplaceAll(p.Bucket, "/", "-"), p.ID)
		elems := []int{0, p.Count - 1}
		if full {
			elems = elems[:0]
			for i := range p.Count {
				elems = append(elems, i)
			}
		}
		// The element fields: a branch element is pos, ksize (4 bytes each) and the
		// child's page id (8); a leaf element flags, pos, ksize, vsize (4 each). Each
		// field's low byte and high byte (little-endian).
		fields := []struct {
			name string
			off  int64
			mask byte
		}{{"pos-high", 3, 0x01}, {"pos-high", 3, 0x80}, {"pos", 0, 0x08}, {"ksize-high", 7, 0x01}, {"ksize", 4, 0x01}, {"pgid", 8, 0x01}, {"pgid-high", 11, 0x01}}
		kind := "branch"
		if !p.Branch {
			kind = "leaf"
			fields = []struct {
				name string
				off  int64
				mask byte
			}{{"flags", 0, 0x01}, {"pos", 4, 0x04}, {"pos-high", 7, 0x01}, {"ksize", 8, 0x01}, {"ksize-high", 11, 0x01}, {"vsize", 12, 0x01}, {"vsize-high", 15, 0x40}}
		}
		n := &branches
		if !p.Branch {
			n = &leaves
		}
		(*n)[p.Bucket]++
		if !full && (*n)[p.Bucket] > 1 {
			continue // a page of each kind per bucket
		}
		for _, i := range elems {
			for _, f := range fields {
				at(fmt.Sprintf("%s-%s-elem%d-%s^%#x", what, kind, i, f.name, f.mask), p.Offset+16+16*int64(i)+f.off, f.mask)
			}
		}
		for _, h := range []struct {
			name string
			off  int64
			mask byte
		}{{"id", 0, 0x01}, {"flags", 8, 0x03}, {"count", 10, 0x01}, {"count-high", 11, 0x01}, {"overflow", 12, 0x01}} {
			at(fmt.Sprintf("%s-%s-header-%s", what, kind, h.name), p.Offset+int64(h.off), h.mask)
		}
	}
	if len(branches) < 2 || len(leaves) < 2 {
		t.Fatalf("the store's docs and vecs buckets have branch pages in %v and leaf pages in %v: the flips would prove little", branches, leaves)
	}
	ps, hwm, err := store.PageLayout(db)
	if err != nil {
		t.Fatal(err)
	}
	n, seed := 16, int64(39)
	fmt.Sscan(os.Getenv("MEMORY_STORE_FLIPS"), &n)
	fmt.Sscan(os.Getenv("MEMORY_STORE_FLIPS_SEED"), &seed)
	rng := rand.New(rand.NewSource(seed))
	for range n {
		off := 2*ps + rng.Int63n(int64(hwm-2)*ps) // past the meta pages (checksummed)
		at(fmt.Sprintf("random-%d", off), off, byte(1+rng.Intn(255)))
	}
	return flips
}

// TestStoreDBFlips: single bytes of store.db flipped where bbolt's pages are most fragile
// (the high byte of a branch element's pos made bbolt's check panic on its own goroutine,
// a leaf element's made it fault, both ending memory check, issue 39 point 3) and at
// random: each damaged copy, checked read-only and then probed, gives the undamaged
// store's answers or typed errors, never a crash or a hang; and its check reports the
// damage whenever any answer differs.
func TestStoreDBFlips(t *testing.T) {
	if testing.Short() {
		t.Skip("a child process per damaged copy")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "a")
	buildTamperStore(t, dir, "a")
	want := probeStore(dir, nil, false) // a writable open may change the files: before the flips are placed
	if want.OpenErr != "" || want.Panic != "" {
		t.Fatalf("the undamaged store: %+v", want)
	}
	if found := checkStoreFindings(dir); len(found) > 0 {
		t.Fatalf("check of the undamaged store: %v", found)
	}
	flips := storeFlips(t, filepath.Join(dir, dbName), os.Getenv("MEMORY_STORE_FLIPS_FULL") != "")
	for _, fl := range flips {
		t.Run(fl.name, func(t *testing.T) {
			t.Parallel()
			d := filepath.Join(root, "case-"+fl.name)
			if err := os.CopyFS(d, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(d)
			xorByte(t, filepath.Join(d, dbName), fl.off, fl.mask)
			got, out, err := runTamperChild(d, tamperCheckEnv+"=1")
			if err != nil {
				t.Fatalf("the probe crashed (%v); its output ends:\n%s", err, tail(out, 1500)+"\nFULL:\n"+crashHead(out))
			}
			if i := strings.Index(out, "panic:"); i >= 0 {
				t.Errorf("a Go panic's words reach the output: %s", tail(out[:min(len(out), i+300)], 600))
			}
			for _, c := range got.Check {
				if strings.Contains(c, "runtime error") || strings.Contains(c, "nil pointer") {
					t.Errorf("check reports a crash rather than the damage: %s", c)
				}
			}
			checkTamperProbe(t, got, want)
			if len(got.Check) == 0 && got.OpenErr == "" && !sameProbe(got, want) {
				t.Errorf("the answers changed (typed errors) and a read-only check reports nothing")
			}
		})
	}
}

// sameProbe reports whether probe got answers every count, search and Get as want does.
func sameProbe(got, want tamperProbe) bool {
	if got.OpenErr != "" || len(got.CountErrs) > 0 {
		return false
	}
	for k, n := range want.Counts {
		if got.Counts[k] != n {
			return false
		}
	}
	for k, w := range want.Hits {
		if strings.Join(got.Hits[k], ",") != strings.Join(w, ",") {
			return false
		}
	}
	for k, w := range want.Gets {
		if got.Gets[k] != w {
			return false
		}
	}
	return true
}

// TestMissingSubBucket: one bit of a sub-bucket's name flipped in a collection's bucket
// ("docs" -> "docc", and the same for vecs, changes, info): the collection's counters say
// it holds 300 documents, and every command says the store is damaged (ErrCorrupt)
// rather than "document not found", 0 results, or a nil pointer (issue 39, point 4: count
// said 300, get "document not found", search 0 results, check "invalid memory address or
// nil pointer dereference").
func TestMissingSubBucket(t *testing.T) {
	for _, c := range []struct {
		sub  string
		at   int64
		mask byte
	}{{"docs", 3, 0x10}, {"vecs", 3, 0x10}, {"changes", 6, 0x01}, {"info", 3, 0x01}} {
		t.Run(c.sub, func(t *testing.T) {
			dir, emb := integrityStore(t)
			db := filepath.Join(dir, dbName)
			e := locateElem(t, db, [][]byte{bkCols, []byte(DefaultCollection)}, []byte(c.sub))
			xorByte(t, db, e.key+c.at, c.mask)
			for _, ro := range []bool{true, false} {
				opts := []Option{emb}
				if ro {
					opts = append(opts, ReadOnly())
				}
				m, err := Open(dir, opts...)
				if err != nil {
					t.Fatalf("Open (read-only %v): %v", ro, err) // the damage is in one collection: the store opens
				}
				corrupt := func(what string, err error) {
					t.Helper()
					if !errors.Is(err, ErrCorrupt) {
						t.Errorf("read-only %v: %s: %v, want ErrCorrupt", ro, what, err)
					} else if strings.Contains(err.Error(), "nil pointer") || strings.Contains(err.Error(), "runtime error") {
						t.Errorf("read-only %v: %s: a crash's words: %v", ro, what, err)
					}
				}
				_, err = m.Count(bg)
				corrupt("Count", err)
				_, err = m.Get(bg, "d0010")
				corrupt("Get", err)
				_, err = m.Get(bg, "d0011")
				corrupt("Get of an id not stored", err)
				for _, mode := range []Mode{BM25, Dense, Hybrid} {
					_, err = m.Search(bg, "word10", WithMode(mode))
					corrupt(fmt.Sprintf("Search (%v)", mode), err)
				}
				_, err = m.Collection("").IDs(bg)
				corrupt("IDs", err)
				if !ro {
					corrupt("Add", m.Add(bg, Document{ID: "new", Text: "a new document"}))
					corrupt("Delete", m.Delete(bg, "d0010"))
				}
				rep, err := m.Check(bg, false)
				if err != nil {
					t.Errorf("read-only %v: Check: %v", ro, err)
				} else if !rep.StoreDamaged() {
					t.Errorf("read-only %v: Check finds no damage to the store of record: %v", ro, rep.Indexes)
				}
				for _, ix := range rep.Indexes {
					if s := ix.String(); strings.Contains(s, "nil pointer") || strings.Contains(s, "runtime error") {
						t.Errorf("read-only %v: Check: a crash's words: %s", ro, s)
					}
				}
				if err := m.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
