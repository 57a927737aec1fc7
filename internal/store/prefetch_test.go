package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestDescendAhead: the level-at-a-time descent of a batch of keys through a vectors
// tree of three levels asks for each level's pages once, before reading them, and ends
// every key, stored or not, in the leaf a lookup of it reads; FillVectors of a batch
// large enough to be read ahead returns what Vector returns for each id.
func TestDescendAhead(t *testing.T) {
	db := openTestDB(t)
	const n, dim = 40000, 48
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = rng.Float32() - 0.5
		}
		return v
	}
	id := func(i int) string { return fmt.Sprintf("doc-%07d", i*7919%n) }
	for lo := 0; lo < n; lo += 5000 {
		var puts []Put
		for i := lo; i < lo+5000; i++ {
			puts = append(puts, Put{ID: id(i), Record: &Record{Text: "x"}, Units: []string{id(i)}, Vecs: [][]float32{vec()}})
		}
		if _, err := db.Write("c", puts, len(puts), len(puts)); err != nil {
			t.Fatal(err)
		}
	}
	var keys [][]byte
	for range 300 {
		keys = append(keys, []byte(id(rng.IntN(n))))
	}
	keys = append(keys, []byte("doc-"), []byte("zzz"), []byte("doc-0012345x")) // not stored
	slices.SortFunc(keys, bytes.Compare)
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, "c", false)
		if err != nil {
			return err
		}
		vb := b.Bucket(bkVecs)
		// The file's bytes as this transaction sees them (read, not mapped: every system).
		data, err := os.ReadFile(tx.DB().Path())
		if err != nil {
			return err
		}
		ps := int64(tx.DB().Info().PageSize)
		w := &pageWalk{data: data[:tx.Size()], pageSize: ps, hwm: uint64(tx.Size()) / uint64(ps)}
		type ask struct {
			level int
			off   int64
		}
		var asked []ask
		level, read := 0, map[uint64]int{} // page -> level it was read at
		leaves := descendAhead(w.data, w.pageSize, w.hwm, uint64(vb.Root()), keys, func(depth int, off, n int64) {
			if n != w.pageSize || off%w.pageSize != 0 {
				t.Fatalf("asked for %d bytes at %d", n, off)
			}
			if a := len(asked); a > 0 && (depth < asked[a-1].level || depth == asked[a-1].level && off <= asked[a-1].off) {
				t.Fatalf("page %d asked for at depth %d after page %d at depth %d", off/w.pageSize, depth, asked[a-1].off/w.pageSize, asked[a-1].level)
			}
			if _, twice := read[uint64(off/w.pageSize)]; twice {
				t.Fatalf("page %d asked for twice", off/w.pageSize)
			}
			asked = append(asked, ask{depth, off})
			read[uint64(off/w.pageSize)], level = depth, depth
		})
		if level < 2 {
			t.Fatalf("the tree has %d levels of pages, want 3 or more for this test", level+1)
		}
		if asked[0].off != int64(vb.Root())*w.pageSize {
			t.Fatalf("first page asked for %d, want the root %d", asked[0].off/w.pageSize, vb.Root())
		}
		for i, k := range keys {
			leaf := leaves[i]
			if leaf == 0 {
				t.Fatalf("key %q did not reach a leaf", k)
			}
			if lv, ok := read[leaf]; !ok || lv != level {
				t.Fatalf("key %q: leaf %d not asked for at the last level (%v, %v)", k, leaf, lv, ok)
			}
			// The leaf is the one a raw lookup ends in: it holds the key, or no page does.
			p, pages, err := w.readPage(leaf)
			if err != nil {
				t.Fatal(err)
			}
			isLeaf, elems, err := parsePage(p, leaf, pages, w.pageSize, w.hwm)
			if err != nil || !isLeaf {
				t.Fatalf("page %d: leaf %v, %v", leaf, isLeaf, err)
			}
			_, stored, err := w.find(rawBucket{name: "vecs", root: uint64(vb.Root())}, k)
			if err != nil {
				t.Fatal(err)
			}
			in := slices.ContainsFunc(elems, func(e pageElem) bool { return bytes.Equal(e.key, k) })
			if in != stored || (stored && vb.Get(k) == nil) {
				t.Fatalf("key %q: in leaf %d %v, stored %v", k, leaf, in, stored)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 200 {
		ids = append(ids, id(rng.IntN(n)))
	}
	dst := make([][]float32, len(ids))
	for i := range dst {
		dst[i] = make([]float32, dim)
	}
	if err := db.FillVectors("c", ids, dst); err != nil {
		t.Fatal(err)
	}
	for i, x := range ids {
		if v, err := db.Vector("c", x); err != nil || !slices.Equal(v, dst[i]) {
			t.Fatalf("%s: FillVectors %v, Vector %v (%v)", x, dst[i][:3], v, err)
		}
	}
}

// branchPage builds a branch page of pageSize bytes with children[i] under keys[i].
func branchPage(pageSize int, keys []string, children []uint64) []byte {
	p := make([]byte, pageSize)
	binary.LittleEndian.PutUint16(p[8:], branchFlag)
	binary.LittleEndian.PutUint16(p[10:], uint16(len(keys)))
	data := pageHeaderSize + len(keys)*elemSize
	for i, k := range keys {
		e := pageHeaderSize + i*elemSize
		binary.LittleEndian.PutUint32(p[e:], uint32(data-e))
		binary.LittleEndian.PutUint32(p[e+4:], uint32(len(k)))
		binary.LittleEndian.PutUint64(p[e+8:], children[i])
		data += copy(p[data:], k)
	}
	return p
}

// TestBranchChild: the child a lookup descends to (the last key at most the key sought,
// or the first), and no child from a page whose elements or keys do not lie in it.
func TestBranchChild(t *testing.T) {
	p := branchPage(256, []string{"b", "d", "f"}, []uint64{10, 11, 12})
	for _, c := range []struct {
		key  string
		want uint64
	}{{"a", 10}, {"b", 10}, {"c", 10}, {"d", 11}, {"e", 11}, {"f", 12}, {"z", 12}} {
		if got, ok := branchChild(p, []byte(c.key)); !ok || got != c.want {
			t.Errorf("key %q: child %d %v, want %d", c.key, got, ok, c.want)
		}
	}
	damaged := func(f func(p []byte)) []byte {
		q := slices.Clone(p)
		f(q)
		return q
	}
	for name, q := range map[string][]byte{
		"no elements":        damaged(func(q []byte) { binary.LittleEndian.PutUint16(q[10:], 0) }),
		"more than fit":      damaged(func(q []byte) { binary.LittleEndian.PutUint16(q[10:], 60000) }),
		"a key past the end": damaged(func(q []byte) { binary.LittleEndian.PutUint32(q[pageHeaderSize+elemSize:], 1<<31) }),
		"a long key":         damaged(func(q []byte) { binary.LittleEndian.PutUint32(q[pageHeaderSize+4:], 1<<30) }),
		"cut short":          p[:20],
		"no header":          p[:8],
	} {
		if got, ok := branchChild(q, []byte("c")); ok {
			t.Errorf("%s: child %d", name, got)
		}
	}
}

// FuzzBranchChild: any bytes as a branch page give a child or none, never a panic.
func FuzzBranchChild(f *testing.F) {
	f.Add(branchPage(128, []string{"b", "d"}, []uint64{3, 4}), []byte("c"))
	f.Add(branchPage(64, []string{"x"}, []uint64{9})[:30], []byte("a"))
	f.Fuzz(func(t *testing.T, p, key []byte) {
		branchChild(p, key)
	})
}

// FuzzDescendAhead: a descent over any bytes as the file ends, never panics, and asks
// only for whole pages inside the data.
func FuzzDescendAhead(f *testing.F) {
	page := 64
	data := make([]byte, 4*page)
	copy(data[2*page:], branchPage(page, []string{"a", "m"}, []uint64{3, 2}))
	binary.LittleEndian.PutUint16(data[3*page+8:], leafFlag)
	f.Add(data, []byte("q"), uint64(2))
	f.Fuzz(func(t *testing.T, data, key []byte, root uint64) {
		hwm := uint64(len(data) / page)
		descendAhead(data, int64(page), hwm, root, [][]byte{key, key}, func(_ int, off, n int64) {
			if off < 0 || off+n > int64(len(data)) || off%int64(page) != 0 {
				t.Fatalf("asked for [%d, %d) of %d bytes", off, off+n, len(data))
			}
		})
	})
}
