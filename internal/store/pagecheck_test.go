package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// pageStore makes a closed store.db in a temporary directory with branch pages, leaf pages,
// overflow pages (one big record), inline buckets (a small collection's) and free pages
// (documents deleted), and returns its path.
func pageStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("page check ", 30)
	var puts []Put
	for i := range 1500 {
		id := fmt.Sprintf("k%05d", 2*i)
		puts = append(puts, Put{ID: id, Record: &Record{Text: text}, Units: []string{id}, Vecs: [][]float32{{float32(i), 1, 2, 3, 4, 5, 6, 7}}})
	}
	puts = append(puts, Put{ID: "big", Record: &Record{Text: strings.Repeat("overflow ", 6000)}, Units: []string{"big"}, Vecs: [][]float32{make([]float32, 8)}})
	if _, err := db.Write("c", puts, len(puts), len(puts)); err != nil {
		t.Fatal(err)
	}
	var dels []string
	for i := 0; i < 1500; i += 3 {
		dels = append(dels, fmt.Sprintf("k%05d", 2*i))
	}
	if _, err := db.Delete("c", dels); err != nil {
		t.Fatal(err)
	}
	putDocs(t, db, "small", true, "a", "b")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// boltCheck runs bbolt's own check of the undamaged file at path (it must agree that it is
// whole: the page check's rules are bbolt's layout, not stricter).
func boltCheck(t *testing.T, path string) []string {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	var found []string
	if err := bdb.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			found = append(found, err.Error())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

// TestPageCheckHealthy: a whole store (branch, leaf, overflow and inline pages, free
// pages) has no findings, open for writing or read-only, as bbolt's own check agrees; its
// pages are listed with their buckets.
func TestPageCheckHealthy(t *testing.T) {
	path := pageStore(t)
	if found := boltCheck(t, path); len(found) > 0 {
		t.Fatalf("bbolt's check of the test store: %q", found)
	}
	if found, more, err := pageCheck(path, 10); err != nil || len(found) > 0 || more > 0 {
		t.Fatalf("page check of a whole store: %q (+%d), %v", found, more, err)
	}
	pages, err := Pages(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, p := range pages {
		k := "leaf"
		if p.Branch {
			k = "branch"
		}
		kinds[p.Bucket+" "+k]++
	}
	for _, want := range []string{"col/c/docs branch", "col/c/docs leaf", "col/c/vecs branch", "col/c/vecs leaf", "(root) leaf"} {
		if kinds[want] == 0 {
			t.Errorf("no %s page: %v", want, kinds)
		}
	}
	for _, ro := range []bool{false, true} {
		db, err := Open(path, Options{NoSync: true, ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		if !ro {
			putDocs(t, db, "c", true, "new1", "new2") // a write: freed and pending pages
		}
		found, err := db.Consistency(10)
		db.Close()
		if err != nil || len(found) > 0 {
			t.Fatalf("read-only %v: %q, %v", ro, found, err)
		}
	}
}

// TestConsistencyPageFlips: single bits flipped in the page headers and element headers of
// branch and leaf pages of every bucket (the high byte of a branch element's pos made
// bbolt's check, which runs on a goroutine of its own, panic with a slice out of range; a
// leaf element's made it fault in verifyKeyOrder: either ended the process, issue 39
// point 3). Consistency reads no damaged page through bbolt: it never panics, and it
// names the damaged page, except for damage that leaves the page's layout whole (the
// last element's key or value one byte longer or shorter, into the page's unused tail:
// the records' checksums find that).
func TestConsistencyPageFlips(t *testing.T) {
	orig := pageStore(t)
	raw, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := Pages(orig)
	if err != nil {
		t.Fatal(err)
	}
	type flip struct {
		name   string
		off    int64
		mask   byte
		silent bool // may leave the layout whole
	}
	var flips []flip
	perBucket := map[string]int{}
	for _, p := range pages {
		kind := "leaf"
		if p.Branch {
			kind = "branch"
		}
		if perBucket[p.Bucket+kind]++; perBucket[p.Bucket+kind] > 1 {
			continue
		}
		for b := range int64(16) {
			if b >= 4 && b < 8 {
				continue // page ids past 2^32: far beyond the file, found the same way as the low bytes
			}
			for _, mask := range []byte{0x01, 0x80} {
				flips = append(flips, flip{name: fmt.Sprintf("%s-page%d-%s-header-byte%d^%#x", p.Bucket, p.ID, kind, b, mask), off: p.Offset + b, mask: mask})
			}
		}
		for _, i := range []int{0, p.Count / 2, p.Count - 1} {
			if i < 0 {
				continue
			}
			for b := range int64(16) {
				for _, mask := range []byte{0x01, 0x80} {
					if mask == 0x80 && b%4 != 3 {
						continue // each field's top bit, and every byte's low bit
					}
					f := flip{name: fmt.Sprintf("%s-page%d-%s-elem%d-byte%d^%#x", p.Bucket, p.ID, kind, i, b, mask), off: p.Offset + 16 + 16*int64(i) + b, mask: mask}
					// The last leaf element's key size or value size: its data ends a little
					// earlier or later in the page's unused tail.
					f.silent = !p.Branch && i == p.Count-1 && b >= 8 && b != 11 && b != 15
					flips = append(flips, f)
				}
			}
		}
	}
	if len(flips) < 150 {
		t.Fatalf("only %d flips: the store's pages are not what the test expects (%d pages)", len(flips), len(pages))
	}
	dir := t.TempDir()
	missed := 0
	for n, f := range flips {
		path := filepath.Join(dir, fmt.Sprintf("flip%d.db", n))
		b := bytes.Clone(raw)
		b[f.off] ^= f.mask
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		found, err := consistencyOf(path)
		os.Remove(path)
		switch {
		case err != nil && !errors.Is(err, ErrCorrupt):
			t.Errorf("%s: %v", f.name, err)
		case err == nil && len(found) == 0 && !f.silent:
			missed++
			t.Errorf("%s: no finding", f.name)
		}
		for _, s := range append(found, fmt.Sprint(err)) {
			if strings.Contains(s, "runtime error") || strings.Contains(s, "panic") {
				t.Errorf("%s: a crash's words: %s", f.name, s)
			}
		}
	}
	t.Logf("%d flips, %d missed", len(flips), missed)
}

// consistencyOf opens the store.db at path read-only and runs Consistency; a panic is
// returned as an error, which fails the test.
func consistencyOf(path string) (found []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	if err := CheckFile(path); err != nil {
		return nil, err
	}
	db, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return db.Consistency(5)
}

// TestShowKey: keys and names in messages are quoted whole up to 64 bytes, else cut at a
// character boundary with their length.
func TestShowKey(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"d1", `"d1"`},
		{strings.Repeat("a", 64), `"` + strings.Repeat("a", 64) + `"`},
		{strings.Repeat("a", 100000), `"` + strings.Repeat("a", 64) + `"… (100000 bytes)`},
		{strings.Repeat("a", 63) + "é" + "zzz", `"` + strings.Repeat("a", 63) + `"… (68 bytes)`},
		{"\x00bad\n", `"\x00bad\n"`},
	} {
		if got := ShowKey(c.in); got != c.want {
			t.Errorf("ShowKey(%.20q…) = %s, want %s", c.in, got, c.want)
		}
		if got := ShowKey([]byte(c.in)); got != c.want {
			t.Errorf("ShowKey([]byte) = %s, want %s", got, c.want)
		}
	}
	if got := ShowKeys([]string{"a", strings.Repeat("b", 200)}); got != `["a" "`+strings.Repeat("b", 64)+`"… (200 bytes)]` {
		t.Errorf("ShowKeys = %s", got)
	}
}

// twinStore makes a closed store.db with collections "a" and "b" holding documents of the
// same ids (so a page of one read as the other's passes every record's checksum), with
// branch pages and free pages, and returns its path.
func twinStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"a", "b"} {
		var puts []Put
		for i := range 600 {
			id := fmt.Sprintf("k%05d", i)
			puts = append(puts, Put{ID: id, Record: &Record{Text: col + strings.Repeat(" twin", 40)}, Units: []string{id}})
		}
		if _, err := db.Write(col, puts, len(puts), len(puts)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Delete("a", []string{"k00001", "k00300"}); err != nil { // free pages
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCensus: a branch element's child page id pointed at another collection's leaf (its
// records, under the same ids, pass their checksums) or at a free page (an older copy of a
// leaf) leaves every page whole; loading either collection then is ErrCorrupt naming the
// page, never another collection's documents (the flip suite found Get answering with
// collection "notes"'s records for "default"). A whole store loads, writable or not.
func TestCensus(t *testing.T) {
	orig := twinStore(t)
	raw, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := Pages(orig)
	if err != nil {
		t.Fatal(err)
	}
	branch := map[string]PageInfo{}
	leaf := map[string]PageInfo{}
	for _, p := range pages {
		if p.Branch {
			branch[p.Bucket] = p
		} else if _, ok := leaf[p.Bucket]; !ok {
			leaf[p.Bucket] = p
		}
	}
	ab, ok1 := branch["col/a/docs"]
	bl, ok2 := leaf["col/b/docs"]
	if !ok1 || !ok2 {
		t.Fatalf("no branch page in a's docs or leaf in b's: %v", pages)
	}
	load := func(path string, ro bool, col string) error {
		db, err := Open(path, Options{NoSync: true, ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_, err = db.LoadCollection(col)
		return err
	}
	for _, ro := range []bool{true, false} {
		for _, col := range []string{"a", "b"} {
			if err := load(orig, ro, col); err != nil {
				t.Fatalf("a whole store, read-only %v, collection %s: %v", ro, col, err)
			}
		}
	}
	m, _ := currentMeta(bytes.NewReader(raw), int64(len(raw)))
	f, err := os.Open(orig)
	if err != nil {
		t.Fatal(err)
	}
	free, err := freelistIDs(f, m)
	f.Close()
	if err != nil || len(free) == 0 {
		t.Fatalf("no free page to point at: %v, %v", free, err)
	}
	for _, c := range []struct {
		name string
		to   uint64
	}{{"another collection's leaf", bl.ID}, {"a free page", free[0]}} {
		b := bytes.Clone(raw)
		binary.LittleEndian.PutUint64(b[ab.Offset+16+8:], c.to) // element 0's child page id
		path := filepath.Join(t.TempDir(), "store.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, ro := range []bool{true, false} {
			if err := load(path, ro, "a"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("page %d", c.to)) {
				t.Errorf("%s, read-only %v: loading a: %v, want ErrCorrupt naming page %d", c.name, ro, err, c.to)
			}
		}
	}
}

// BenchmarkLoadCheck is the cost of the page checks of loading a collection (the census
// and the branch pages: once a process) and of Check's whole-file page check, on a store
// of 200,000 documents of 300 bytes (MEMORY_BENCH_DOCS sets another number).
func BenchmarkLoadCheck(b *testing.B) {
	n := 200_000
	fmt.Sscan(os.Getenv("MEMORY_BENCH_DOCS"), &n)
	db := missStore(b, n, 300)
	path := db.path
	db.Close()
	fi, _ := os.Stat(path)
	b.Logf("store.db: %d MB", fi.Size()>>20)
	b.Run("load", func(b *testing.B) {
		for range b.N {
			db, err := Open(path, Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := db.LoadCollection("c"); err != nil {
				b.Fatal(err)
			}
			db.Close()
		}
	})
	b.Run("pages", func(b *testing.B) {
		for range b.N {
			if found, _, err := pageCheck(path, 5); err != nil || len(found) > 0 {
				b.Fatal(found, err)
			}
		}
	})
}
