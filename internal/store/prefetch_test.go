package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"unsafe"

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
		leaves := descendAhead(w.data, w.pageSize, w.hwm, uint64(vb.Root()), keys, func(depth int, pages []uint64) {
			if a := len(asked); a > 0 && depth != asked[a-1].level+1 {
				t.Fatalf("level %d asked for after level %d", depth, asked[a-1].level)
			}
			for i, id := range pages {
				if i > 0 && id <= pages[i-1] {
					t.Fatalf("depth %d: page %d asked for after page %d", depth, id, pages[i-1])
				}
				if id < 2 || id >= w.hwm {
					t.Fatalf("depth %d: page %d asked for, outside the file's %d", depth, id, w.hwm)
				}
				if _, twice := read[id]; twice {
					t.Fatalf("page %d asked for twice", id)
				}
				asked = append(asked, ask{depth, int64(id) * w.pageSize})
				read[id], level = depth, depth
			}
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
	return testPage(pageSize, branchFlag, keys, nil, children)
}

// leafPage builds a leaf page of pageSize bytes holding vals[i] under keys[i].
func leafPage(pageSize int, keys, vals []string) []byte {
	return testPage(pageSize, leafFlag, keys, vals, nil)
}

// testPage builds a page of pageSize bytes with flags (branchFlag or leafFlag) whose
// elements are keys[i] with children[i] (branch) or vals[i] (leaf), as bbolt lays them out.
func testPage(pageSize int, flags uint16, keys, vals []string, children []uint64) []byte {
	p := make([]byte, pageSize)
	le := binary.LittleEndian
	le.PutUint16(p[8:], flags)
	le.PutUint16(p[10:], uint16(len(keys)))
	data := pageHeaderSize + len(keys)*elemSize
	for i, k := range keys {
		e := pageHeaderSize + i*elemSize
		if flags == leafFlag {
			le.PutUint32(p[e+4:], uint32(data-e))
			le.PutUint32(p[e+8:], uint32(len(k)))
			le.PutUint32(p[e+12:], uint32(len(vals[i])))
			data += copy(p[data:], k)
			data += copy(p[data:], vals[i])
		} else {
			le.PutUint32(p[e:], uint32(data-e))
			le.PutUint32(p[e+4:], uint32(len(k)))
			le.PutUint64(p[e+8:], children[i])
			data += copy(p[data:], k)
		}
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
// only for whole data pages inside it.
func FuzzDescendAhead(f *testing.F) {
	page := 64
	data := make([]byte, 4*page)
	copy(data[2*page:], branchPage(page, []string{"a", "m"}, []uint64{3, 2}))
	binary.LittleEndian.PutUint16(data[3*page+8:], leafFlag)
	f.Add(data, []byte("q"), uint64(2))
	f.Fuzz(func(t *testing.T, data, key []byte, root uint64) {
		hwm := uint64(len(data) / page)
		descendAhead(data, int64(page), hwm, root, [][]byte{key, key}, func(_ int, pages []uint64) {
			for _, id := range pages {
				if id < 2 || int64(id+1)*int64(page) > int64(len(data)) {
					t.Fatalf("asked for page %d of %d bytes", id, len(data))
				}
			}
		})
	})
}

// TestDescendKeys: the leaves descendKeys finds hold, for every key of a batch, the value
// bbolt's lookup returns (leafValue), and none for a key not stored; nothing is found for
// a batch too small to descend for or in a write transaction. A batch of FillVectors
// reads every vector as Vector does, and a vector with a damaged value, or under a
// damaged key, is ErrCorrupt in a batch as alone.
func TestDescendKeys(t *testing.T) {
	db := openTestDB(t)
	const n, dim = 20000, 16
	rng := rand.New(rand.NewPCG(3, 4))
	id := func(i int) string { return fmt.Sprintf("v%06d", i*7919%n) }
	var puts []Put
	for i := range n {
		v := make([]float32, dim)
		for j := range v {
			v[j] = rng.Float32() - 0.5
		}
		puts = append(puts, Put{ID: id(i), Record: &Record{Text: "x"}, Units: []string{id(i)}, Vecs: [][]float32{v}})
	}
	if _, err := db.Write("c", puts, n, n); err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for range 400 {
		keys = append(keys, []byte(id(rng.IntN(n))))
	}
	keys = append(keys, []byte("a"), []byte("v"), []byte("v0123456"), []byte("z")) // not stored
	slices.SortFunc(keys, bytes.Compare)
	mapped := false
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, "c", false)
		if err != nil {
			return err
		}
		vb := b.Bucket(bkVecs)
		leaves, done := descendKeys(vb, keys)
		defer done()
		if small, done := descendKeys(vb, keys[:prefetchMin-1]); small != nil {
			done()
			t.Errorf("leaves found for %d keys", prefetchMin-1)
		}
		if leaves == nil {
			return nil // the file is not mapped on this system
		}
		mapped = true
		for i, k := range keys {
			want := vb.Get(k)
			got, ok := leafValue(leaves[i], k)
			if ok != (want != nil) || !bytes.Equal(got, want) {
				t.Fatalf("key %q: leaf value %x %v, bbolt %x", k, got, ok, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !mapped && (runtime.GOOS == "linux" || runtime.GOOS == "darwin") {
		t.Fatal("no leaves found on a system that maps files")
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		b, err := colBucket(tx, "c", false)
		if err != nil {
			return err
		}
		if leaves, done := descendKeys(b.Bucket(bkVecs), keys); leaves != nil {
			done()
			t.Error("leaves found in a write transaction")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	ids := make([]string, 64)
	for i := range ids {
		ids[i] = id(i * 311)
	}
	read := func() error {
		dst := make([][]float32, len(ids))
		for i := range dst {
			dst[i] = make([]float32, dim)
		}
		err := db.FillVectors("c", ids, dst)
		for i, x := range ids {
			if err != nil {
				break
			}
			if v, err := db.Vector("c", x); err != nil || !slices.Equal(v, dst[i]) {
				t.Fatalf("%s: FillVectors %v, Vector %v (%v)", x, dst[i][:3], v, err)
			}
		}
		return err
	}
	if err := read(); err != nil {
		t.Fatal(err)
	}
	vecs := [][]byte{bkCols, []byte("c"), bkVecs}
	var good []byte
	db.view(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "c", false)
		good = slices.Clone(b.Bucket(bkVecs).Get([]byte(ids[5])))
		return nil
	})
	bad := slices.Clone(good)
	bad[len(bad)-1] ^= 0x10
	setValue(t, db, vecs, []byte(ids[5]), bad)
	if err := read(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a batch with a damaged value: %v", err)
	}
	setValue(t, db, vecs, []byte(ids[5]), nil)
	setValue(t, db, vecs, []byte(ids[5]+"x"), good) // the vector under a damaged key
	if err := read(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a batch with a vector under a damaged key: %v", err)
	}
}

// TestLeafValue: the value of a key in a leaf page, none for a key it does not hold or a
// nested bucket's, and none from a page whose elements or data do not lie in it.
func TestLeafValue(t *testing.T) {
	p := leafPage(256, []string{"b", "d", "f"}, []string{"B", "DD", ""})
	for _, c := range []struct {
		key, want string
		ok        bool
	}{{"b", "B", true}, {"d", "DD", true}, {"f", "", true}, {"a", "", false}, {"c", "", false}, {"g", "", false}} {
		if got, ok := leafValue(p, []byte(c.key)); ok != c.ok || string(got) != c.want {
			t.Errorf("key %q: %q %v, want %q %v", c.key, got, ok, c.want, c.ok)
		}
	}
	damaged := func(f func(p []byte)) []byte {
		q := slices.Clone(p)
		f(q)
		return q
	}
	for name, q := range map[string][]byte{
		"a branch page":      damaged(func(q []byte) { binary.LittleEndian.PutUint16(q[8:], branchFlag) }),
		"a nested bucket":    damaged(func(q []byte) { binary.LittleEndian.PutUint32(q[pageHeaderSize+elemSize:], bucketElemFlag) }),
		"more than fit":      damaged(func(q []byte) { binary.LittleEndian.PutUint16(q[10:], 60000) }),
		"a key past the end": damaged(func(q []byte) { binary.LittleEndian.PutUint32(q[pageHeaderSize+elemSize+4:], 1<<31) }),
		"a long value":       damaged(func(q []byte) { binary.LittleEndian.PutUint32(q[pageHeaderSize+elemSize+12:], 1<<30) }),
		"cut short":          p[:40],
		"no header":          p[:8],
	} {
		if got, ok := leafValue(q, []byte("d")); ok {
			t.Errorf("%s: value %q", name, got)
		}
	}
}

// FuzzLeafValue: any bytes as a leaf page give a value inside them or none, never a panic.
func FuzzLeafValue(f *testing.F) {
	f.Add(leafPage(128, []string{"b", "d"}, []string{"x", "yy"}), []byte("d"))
	f.Add(leafPage(64, []string{"k"}, []string{"v"})[:30], []byte("k"))
	f.Fuzz(func(t *testing.T, p, key []byte) {
		if v, ok := leafValue(p, key); ok && len(v) > 0 {
			if lo := uintptr(unsafe.Pointer(&v[0])) - uintptr(unsafe.Pointer(&p[0])); lo+uintptr(len(v)) > uintptr(len(p)) {
				t.Fatalf("value outside the page")
			}
		}
	})
}

// TestSampleAhead: a level of up to aheadSample pages is asked for page by page; a larger
// one is sampled first (aheadSample pages spread over it, from the first) and asked for
// whole when a sampled page is not resident, not at all when every sampled page is.
func TestSampleAhead(t *testing.T) {
	level := func(n int) []uint64 {
		p := make([]uint64, n)
		for i := range p {
			p[i] = uint64(10 + 3*i)
		}
		return p
	}
	for _, c := range []struct {
		name         string
		pages        []uint64
		cold         map[uint64]bool // pages not resident
		checks, asks int
	}{
		{"few, all resident", level(aheadSample), nil, 0, aheadSample},
		{"many, all resident", level(1000), nil, aheadSample, 0},
		{"many, the first cold", level(1000), map[uint64]bool{10: true}, 1, 1000},
		{"many, the last sampled cold", level(1000), map[uint64]bool{uint64(10 + 3*(15*1000/aheadSample)): true}, aheadSample, 1000},
		{"many, one unsampled cold", level(1000), map[uint64]bool{13: true}, aheadSample, 0},
	} {
		checks, asks := 0, 0
		sampleAhead(c.pages, func(id uint64) bool { checks++; return !c.cold[id] }, func(uint64) { asks++ })
		if checks != c.checks || asks != c.asks {
			t.Errorf("%s: %d checks, %d asked for; want %d, %d", c.name, checks, asks, c.checks, c.asks)
		}
	}
}

// BenchmarkFillVectors: a dense search's rescoring reads, 560 vectors of 768 int8 values
// at random among 100,000 (the 21M store's 56 x k=10 candidates) in one FillVectors, the
// file in the page cache: each vector taken from the leaf the read-ahead descent found,
// and looked up by bbolt after that descent (leafLookups off). ns/op is one batch.
func BenchmarkFillVectors(b *testing.B) {
	db, err := Open(filepath.Join(b.TempDir(), "store.db"), Options{NoSync: true, Precision: PrecisionInt8})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const n, dim, batch = 100000, 768, 560
	rng := rand.New(rand.NewPCG(5, 6))
	id := func(i int) string { return fmt.Sprintf("wiki-%08d", i*7919%n) }
	for lo := 0; lo < n; lo += 10000 {
		var puts []Put
		for i := lo; i < lo+10000; i++ {
			v := make([]float32, dim)
			for j := range v {
				v[j] = rng.Float32() - 0.5
			}
			puts = append(puts, Put{ID: id(i), Record: &Record{Text: "x"}, Units: []string{id(i)}, Vecs: [][]float32{v}})
		}
		if _, err := db.Write("c", puts, len(puts), len(puts)); err != nil {
			b.Fatal(err)
		}
	}
	ids := make([]string, batch)
	dst := make([][]float32, batch)
	for i := range dst {
		dst[i] = make([]float32, dim)
	}
	for _, leaf := range []bool{true, false} {
		b.Run(fmt.Sprint("leaf=", leaf), func(b *testing.B) {
			old := leafLookups
			leafLookups = leaf
			defer func() { leafLookups = old }()
			for b.Loop() {
				for i := range ids {
					ids[i] = id(rng.IntN(n))
				}
				if err := db.FillVectors("c", ids, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
