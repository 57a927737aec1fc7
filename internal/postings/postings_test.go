package postings

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// posting lists used by the tests: docs strictly rising, freqs >= 1.
type plist struct {
	docs, freqs []uint32
}

// genList makes n postings with gaps uniform in [1, maxGap] starting at
// first and freqs uniform in [1, maxFreq].
func genList(rng *rand.Rand, n int, first uint32, maxGap, maxFreq uint32) plist {
	p := plist{docs: make([]uint32, n), freqs: make([]uint32, n)}
	d := uint64(first)
	for i := range n {
		if i > 0 {
			d += 1 + rng.Uint64N(uint64(maxGap))
		}
		p.docs[i] = uint32(d)
		p.freqs[i] = 1 + rng.Uint32N(maxFreq)
	}
	return p
}

func encode(tb testing.TB, p plist) []byte {
	tb.Helper()
	var w ListWriter
	for i, d := range p.docs {
		if err := w.Add(d, p.freqs[i]); err != nil {
			tb.Fatalf("Add(%d, %d): %v", d, p.freqs[i], err)
		}
	}
	if w.Len() != len(p.docs) {
		tb.Fatalf("writer Len %d, want %d", w.Len(), len(p.docs))
	}
	return w.Finish(nil)
}

// decodeAll decodes every block of b.
func decodeAll(b []byte) (plist, error) {
	l, err := OpenList(b)
	if err != nil {
		return plist{}, err
	}
	var p plist
	docs, freqs := make([]uint32, BlockSize), make([]uint32, BlockSize)
	for i := range l.Blocks() {
		n, err := l.DecodeBlock(i, docs, freqs)
		if err != nil {
			return p, err
		}
		p.docs = append(p.docs, docs[:n]...)
		p.freqs = append(p.freqs, freqs[:n]...)
	}
	return p, nil
}

func roundTripCases() []struct {
	name string
	p    plist
} {
	rng := rand.New(rand.NewPCG(1, 2))
	type tc = struct {
		name string
		p    plist
	}
	cases := []tc{
		{"one-zero", plist{[]uint32{0}, []uint32{1}}},
		{"one-max", plist{[]uint32{math.MaxUint32}, []uint32{math.MaxUint32}}},
		{"two-extremes", plist{[]uint32{0, math.MaxUint32}, []uint32{1, 2}}},
		{"dense-127", genList(rng, 127, 0, 1, 1)},
		{"dense-128", genList(rng, 128, 0, 1, 1)},
		{"dense-129", genList(rng, 129, 0, 1, 1)},
		{"dense-1000", genList(rng, 1000, 5, 1, 1)},
		{"dense-at-top", genList(rng, 300, math.MaxUint32-299, 1, 1)},
		{"small-1000", genList(rng, 1000, 3, 4, 3)},
		{"gaps-1-2", genList(rng, 1000, 0, 2, 2)},
		{"mid-129", genList(rng, 129, 100, 5000, 5)},
		{"sparse-huge-gaps", genList(rng, 1000, 7, 1<<22, 2)},
		{"gaps-2^31", genList(rng, 2, 0, 1<<31, 1)},
		{"freq-max", genList(rng, 300, 0, 3, math.MaxUint32)},
		{"100k", genList(rng, 100_000, 0, 40, 3)},
	}
	for _, n := range []int{1, 127, 128, 129, 1000, 100_000} {
		cases = append(cases, tc{"mixed", genList(rng, n, rng.Uint32N(1000), 1+rng.Uint32N(1000), 1+rng.Uint32N(10))})
	}
	// A list ending exactly at 2^32-1 with huge gaps.
	p := genList(rng, 500, 0, 1<<23, 7)
	shift := math.MaxUint32 - p.docs[len(p.docs)-1]
	for i := range p.docs {
		p.docs[i] += shift
	}
	cases = append(cases, tc{"ends-at-max", p})
	return cases
}

func TestRoundTrip(t *testing.T) {
	var sawDW, sawFW [33]bool
	for _, c := range roundTripCases() {
		b := encode(t, c.p)
		got, err := decodeAll(b)
		if err != nil {
			t.Fatalf("%s (%d postings): %v", c.name, len(c.p.docs), err)
		}
		if !slices.Equal(got.docs, c.p.docs) || !slices.Equal(got.freqs, c.p.freqs) {
			t.Fatalf("%s (%d postings): round trip differs", c.name, len(c.p.docs))
		}
		l, _ := OpenList(b)
		if l.Len() != len(c.p.docs) || l.Blocks() != (len(c.p.docs)+BlockSize-1)/BlockSize {
			t.Fatalf("%s: Len %d Blocks %d", c.name, l.Len(), l.Blocks())
		}
		total := 0
		for i := range l.Blocks() {
			end := min((i+1)*BlockSize, len(c.p.docs))
			if l.LastDoc(i) != c.p.docs[end-1] {
				t.Fatalf("%s: LastDoc(%d) = %d, want %d", c.name, i, l.LastDoc(i), c.p.docs[end-1])
			}
			total += l.BlockLen(i)
			sawDW[l.info[i].dw] = true
			sawFW[l.info[i].fw] = true
		}
		if total != l.Len() {
			t.Fatalf("%s: BlockLen sums to %d, want %d", c.name, total, l.Len())
		}
	}
	for _, w := range []int{0, 1, 32} {
		if !sawDW[w] || !sawFW[w] {
			t.Errorf("width %d not exercised: doc %v freq %v", w, sawDW[w], sawFW[w])
		}
	}
}

func TestEmptyList(t *testing.T) {
	var w ListWriter
	b := w.Finish(nil)
	if len(b) != 1 || b[0] != 0 {
		t.Fatalf("empty list = %x", b)
	}
	l, err := OpenList(b)
	if err != nil || l.Len() != 0 || l.Blocks() != 0 || l.Seek(0) != 0 {
		t.Fatalf("empty list: %v len %d blocks %d", err, l.Len(), l.Blocks())
	}
	if _, err := l.DecodeBlock(0, make([]uint32, BlockSize), make([]uint32, BlockSize)); !errors.Is(err, ErrBlockRange) {
		t.Fatalf("decode of empty list: %v", err)
	}
}

func TestWriterReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var w ListWriter
	var out []byte
	var lens []int
	lists := []plist{genList(rng, 300, 9, 50, 4), genList(rng, 5, 1, 2, 1), genList(rng, 129, 0, 1, 9)}
	for _, p := range lists {
		for i := range p.docs {
			if err := w.Add(p.docs[i], p.freqs[i]); err != nil {
				t.Fatal(err)
			}
		}
		before := len(out)
		out = w.Finish(out)
		lens = append(lens, len(out)-before)
	}
	off := 0
	for i, p := range lists {
		got, err := decodeAll(out[off : off+lens[i]])
		if err != nil || !slices.Equal(got.docs, p.docs) || !slices.Equal(got.freqs, p.freqs) {
			t.Fatalf("list %d: %v", i, err)
		}
		off += lens[i]
	}
}

func TestWriterErrors(t *testing.T) {
	var w ListWriter
	if err := w.Add(5, 0); !errors.Is(err, ErrFreq) {
		t.Fatalf("freq 0: %v", err)
	}
	if w.Len() != 0 {
		t.Fatalf("rejected posting counted")
	}
	for d := range uint32(200) {
		if err := w.Add(10+2*d, 1+d%3); err != nil {
			t.Fatal(err)
		}
	}
	// 200 postings: one block flushed, 72 pending.
	for _, bad := range []struct{ doc, freq uint32 }{{408, 1}, {407, 2}, {0, 1}, {500, 0}} {
		err := w.Add(bad.doc, bad.freq)
		want := ErrOrder
		if bad.freq == 0 {
			want = ErrFreq
		}
		if !errors.Is(err, want) {
			t.Fatalf("Add(%d, %d) = %v, want %v", bad.doc, bad.freq, err, want)
		}
	}
	if err := w.Add(409, 4); err != nil {
		t.Fatal(err)
	}
	got, err := decodeAll(w.Finish(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := plist{}
	for d := range uint32(200) {
		want.docs = append(want.docs, 10+2*d)
		want.freqs = append(want.freqs, 1+d%3)
	}
	want.docs = append(want.docs, 409)
	want.freqs = append(want.freqs, 4)
	if !slices.Equal(got.docs, want.docs) || !slices.Equal(got.freqs, want.freqs) {
		t.Fatal("rejected postings changed the list")
	}
}

func TestDecodeArgs(t *testing.T) {
	b := encode(t, genList(rand.New(rand.NewPCG(5, 6)), 200, 0, 3, 2))
	l, err := OpenList(b)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]uint32, BlockSize)
	for _, i := range []int{-1, 2, 1 << 40} {
		if _, err := l.DecodeBlock(i, big, big); !errors.Is(err, ErrBlockRange) {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	short := make([]uint32, BlockSize-1)
	if _, err := l.DecodeBlock(1, short, big); !errors.Is(err, io.ErrShortBuffer) {
		t.Fatalf("short docs: %v", err)
	}
	if _, err := l.DecodeBlock(1, big, short); !errors.Is(err, io.ErrShortBuffer) {
		t.Fatalf("short freqs: %v", err)
	}
}

// TestDecodeDocsFreq: DecodeDocs decodes the documents DecodeBlock does
// with the same checks (a byte flipped in the frequencies is found), and
// Freq reads each posting's frequency alone, at every width (0..32, full
// and short blocks); indexes outside the block are ErrBlockRange.
func TestDecodeDocsFreq(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var lists []plist
	for w := range 33 {
		maxFreq := uint32(1)
		if w > 0 {
			maxFreq = uint32(min(uint64(1)<<w, math.MaxUint32))
		}
		lists = append(lists, genList(rng, 300, 0, 1+rng.Uint32N(5000), maxFreq))
	}
	docs, freqs, docs2 := make([]uint32, BlockSize), make([]uint32, BlockSize), make([]uint32, BlockSize)
	widths := map[uint8]bool{}
	for li, p := range lists {
		b := encode(t, p)
		l, err := OpenList(b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.Blocks() {
			widths[l.info[i].fw] = true
			n, err := l.DecodeBlock(i, docs, freqs)
			if err != nil {
				t.Fatal(err)
			}
			m, err := l.DecodeDocs(i, docs2)
			if err != nil || m != n || !slices.Equal(docs[:n], docs2[:m]) {
				t.Fatalf("list %d block %d: DecodeDocs %d, %v", li, i, m, err)
			}
			for k := range n {
				if f, err := l.Freq(i, k); err != nil || f != freqs[k] {
					t.Fatalf("list %d block %d: Freq(%d) = %d, %v, want %d", li, i, k, f, err, freqs[k])
				}
			}
			if _, err := l.Freq(i, n); !errors.Is(err, ErrBlockRange) {
				t.Fatalf("list %d block %d: Freq past the block: %v", li, i, err)
			}
		}
		if _, err := l.Freq(l.Blocks(), 0); !errors.Is(err, ErrBlockRange) {
			t.Fatalf("Freq past the list: %v", err)
		}
		if _, err := l.DecodeDocs(-1, docs2); !errors.Is(err, ErrBlockRange) {
			t.Fatalf("DecodeDocs(-1): %v", err)
		}
		if _, err := l.DecodeDocs(0, docs2[:BlockSize-1]); !errors.Is(err, io.ErrShortBuffer) {
			t.Fatalf("DecodeDocs, short slice: %v", err)
		}
		// A bit flipped in the last block's last byte (its frequencies, but for width 0)
		// is found by DecodeDocs too.
		if l.info[l.Blocks()-1].fw > 0 {
			bad := slices.Clone(b)
			bad[len(bad)-1] ^= 1
			lb, err := OpenList(bad)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := lb.DecodeDocs(lb.Blocks()-1, docs2); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("list %d: a flipped frequency bit: DecodeDocs %v", li, err)
			}
		}
	}
	for _, w := range []uint8{0, 1, 2, 3, 7, 13, 31, 32} {
		if !widths[w] {
			t.Errorf("no block of frequency width %d was read", w)
		}
	}
}

func TestSeek(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	p := genList(rng, 5000, 10, 30, 2)
	l, err := OpenList(encode(t, p))
	if err != nil {
		t.Fatal(err)
	}
	probe := []uint32{0, 9, 10, 11, p.docs[127], p.docs[127] + 1, p.docs[len(p.docs)-1], p.docs[len(p.docs)-1] + 1, math.MaxUint32}
	for range 500 {
		probe = append(probe, rng.Uint32N(p.docs[len(p.docs)-1]+10))
	}
	for _, d := range probe {
		want := l.Blocks()
		if k, ok := slices.BinarySearch(p.docs, d); ok || k < len(p.docs) {
			want = k / BlockSize
		}
		if got := l.Seek(d); got != want {
			t.Fatalf("Seek(%d) = %d, want %d", d, got, want)
		}
	}
}

func TestListReset(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var l List
	for _, n := range []int{1000, 3, 700, 0, 129} {
		p := genList(rng, n, 0, 9, 2)
		if err := l.Reset(encode(t, p)); err != nil {
			t.Fatal(err)
		}
		if l.Len() != n {
			t.Fatalf("Len %d, want %d", l.Len(), n)
		}
	}
	if err := l.Reset([]byte{0x80}); !errors.Is(err, ErrCorrupt) || l.Len() != 0 || l.Blocks() != 0 {
		t.Fatalf("bad reset: %v, len %d blocks %d", err, l.Len(), l.Blocks())
	}
}

// checkDamaged opens and decodes a damaged encoding of p: every error must
// wrap ErrCorrupt, and a block that decodes must give p's documents.
func checkDamaged(t *testing.T, what string, b []byte, p plist) {
	t.Helper()
	l, err := OpenList(b)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: OpenList error %v does not wrap ErrCorrupt", what, err)
		}
		return
	}
	docs, freqs := make([]uint32, BlockSize), make([]uint32, BlockSize)
	for i := range l.Blocks() {
		n, err := l.DecodeBlock(i, docs, freqs)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s: block %d: error %v does not wrap ErrCorrupt", what, i, err)
			}
			continue
		}
		lo := i * BlockSize
		if lo+n > len(p.docs) || !slices.Equal(docs[:n], p.docs[lo:lo+n]) {
			t.Fatalf("%s: block %d decoded %d wrong documents silently", what, i, n)
		}
	}
}

func TestDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	lists := []plist{
		{[]uint32{0}, []uint32{1}},
		{[]uint32{4711}, []uint32{3}},
		{[]uint32{math.MaxUint32}, []uint32{math.MaxUint32}},
		genList(rng, 5, 100, 3000, 3),
		genList(rng, 127, 0, 2, 2),
		genList(rng, 128, 0, 1, 1),
		genList(rng, 129, 50, 3, 3),
		genList(rng, 300, 1, 100, 40),
		genList(rng, 260, 1, 1<<24, 1<<20),
		genList(rng, 1000, 0, 6, 3),
	}
	masks := []byte{0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff, 0x0f, 0xf0, 0x55, 0xaa, 0x03, 0x81}
	for li, p := range lists {
		b := encode(t, p)
		dam := make([]byte, len(b))
		for cut := range len(b) {
			checkDamaged(t, "truncated", b[:cut], p)
			if _, err := OpenList(b[:cut]); err == nil {
				t.Fatalf("list %d truncated to %d of %d bytes opened", li, cut, len(b))
			}
		}
		checkDamaged(t, "extended", append(slices.Clip(b), 0), p)
		for pos := range b {
			if len(b) > 400 && rng.IntN(len(b)) > 400 {
				continue // sample long lists
			}
			for _, m := range masks {
				copy(dam, b)
				dam[pos] ^= m
				checkDamaged(t, "flipped", dam, p)
			}
			for range 8 {
				copy(dam, b)
				dam[pos] = byte(rng.Uint32())
				checkDamaged(t, "overwritten", dam, p)
			}
		}
	}
}

// TestSingleByteDamageDetected checks the stronger property of the check
// byte: any change to one byte of a block or of its skip entry that
// leaves the skip table parseable is reported, frequencies included.
func TestSingleByteDamageDetected(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	lists := []plist{
		{[]uint32{0}, []uint32{1}},
		{[]uint32{77777}, []uint32{5}},
		genList(rng, 128, 0, 1, 1),
		genList(rng, 130, 1<<30, 1, 1),
		genList(rng, 200, 0, 2, 3),
		genList(rng, 130, 9, 5000, 1000),
		genList(rng, 40, 1<<20, 1<<26, math.MaxUint32),
	}
	docs, freqs := make([]uint32, BlockSize), make([]uint32, BlockSize)
	var l List
	// reported tells whether the damaged list b fails to open or to decode.
	reported := func(b []byte) error {
		if err := l.Reset(b); err != nil {
			return err
		}
		for i := range l.Blocks() {
			if _, err := l.DecodeBlock(i, docs, freqs); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range lists {
		b := encode(t, p)
		dam := make([]byte, len(b))
		for pos := range b {
			for m := 1; m < 256; m++ {
				copy(dam, b)
				dam[pos] ^= byte(m)
				err := reported(dam)
				if err == nil {
					t.Fatalf("byte %d ^ %#x of %d undetected", pos, m, len(b))
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("byte %d ^ %#x: %v", pos, m, err)
				}
			}
		}
	}
}

func TestErrorMessages(t *testing.T) {
	b := encode(t, plist{[]uint32{3}, []uint32{1}})
	// b = count, last, widths, check, data
	b[2] = 40
	_, err := OpenList(b)
	if !errors.Is(err, ErrCorrupt) || err.Error() != "postings: block 0 entry: doc width 40 > 32" {
		t.Fatalf("err = %v", err)
	}
}

func TestPackUnpack(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	vals := make([]uint32, BlockSize)
	got := make([]uint32, BlockSize)
	for w := uint8(0); w <= 32; w++ {
		mask := uint32(uint64(1)<<w - 1)
		for _, n := range []int{1, 2, 7, 63, 64, 65, 127, 128} {
			for k := range vals {
				vals[k] = rng.Uint32() & mask
				if k%5 == 0 {
					vals[k] = mask
				}
			}
			b := appendPacked(nil, vals[:n], w)
			if len(b) != packedLen(n, int(w)) {
				t.Fatalf("w %d n %d: packed %d bytes, want %d", w, n, len(b), packedLen(n, int(w)))
			}
			for k := range got {
				got[k] = 0xdeadbeef
			}
			unpackTail(got, b, n, w)
			if !slices.Equal(got[:n], vals[:n]) {
				t.Fatalf("w %d n %d: unpackTail differs", w, n)
			}
			unpackFreqs(got, b, n, w)
			for k := range n {
				if got[k] != vals[k]+1 {
					t.Fatalf("w %d n %d: unpackFreqs[%d] = %d, want %d", w, n, k, got[k], vals[k]+1)
				}
			}
			start := uint64(rng.Uint32())
			a := unpackDocs(got, b, n, w, start)
			want := start
			for k := range n {
				want += uint64(vals[k]) + 1
				if got[k] != uint32(want) {
					t.Fatalf("w %d n %d: unpackDocs[%d] = %d, want %d", w, n, k, got[k], uint32(want))
				}
			}
			if a != want {
				t.Fatalf("w %d n %d: unpackDocs returned %d, want %d", w, n, a, want)
			}
		}
	}
}

// TestLayout pins the byte layout described in doc.go.
func TestLayout(t *testing.T) {
	// docs 3, 5, 6 with freqs 1, 4, 1: gaps minus one 3, 1, 0 at width 2
	// (0b00_01_11 = 0x07), freqs minus one 0, 3, 0 at width 2
	// (0b00_11_00 = 0x0c); widths byte 2 | 2<<6 = 0x82; check byte
	// 0x06 ^ 0x82 ^ 0x07 ^ 0x0c = 0x8f.
	got := encode(t, plist{[]uint32{3, 5, 6}, []uint32{1, 4, 1}})
	want := []byte{0x03, 0x06, 0x82, 0x8f, 0x07, 0x0c}
	if !slices.Equal(got, want) {
		t.Fatalf("encoded % x, want % x", got, want)
	}
	// Freq width 3..32 takes a second widths byte: doc 0 with freq 9
	// (8 at width 4): count 1, last 0, widths 0|3<<6 then 4, check
	// 0x00 ^ 0xc0 ^ 0x04 ^ 0x08 = 0xcc, freqbits 0x08.
	got = encode(t, plist{[]uint32{0}, []uint32{9}})
	want = []byte{0x01, 0x00, 0xc0, 0x04, 0xcc, 0x08}
	if !slices.Equal(got, want) {
		t.Fatalf("encoded % x, want % x", got, want)
	}
}

// TestBase: a list written with SetBase(base) and read with ResetBase(base) gives back
// its documents; its first block packs the first document's distance from base (smaller
// than with base 0 for documents far above 0); a document below base is refused; a reader
// with another base sees damage (the documents do not end at the skip table's last), not
// other documents; base 0 writes the bytes a writer without SetBase writes; Finish resets
// the base.
func TestBase(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, base := range []uint32{0, 1, 1000, 1 << 20, math.MaxUint32 - 5000} {
		p := genList(rng, 300, base+uint32(rng.IntN(3)), 9, 4)
		var w ListWriter
		if !w.SetBase(base) {
			t.Fatal("SetBase on an empty writer refused")
		}
		for i, d := range p.docs {
			if err := w.Add(d, p.freqs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if w.SetBase(0) {
			t.Fatal("SetBase after an Add accepted")
		}
		b := w.Finish(nil)
		var l List
		if err := l.ResetBase(b, base); err != nil {
			t.Fatalf("base %d: %v", base, err)
		}
		var got plist
		docs, freqs := make([]uint32, BlockSize), make([]uint32, BlockSize)
		for i := range l.Blocks() {
			n, err := l.DecodeBlock(i, docs, freqs)
			if err != nil {
				t.Fatalf("base %d block %d: %v", base, i, err)
			}
			got.docs = append(got.docs, docs[:n]...)
			got.freqs = append(got.freqs, freqs[:n]...)
		}
		if !slices.Equal(got.docs, p.docs) || !slices.Equal(got.freqs, p.freqs) {
			t.Fatalf("base %d: round trip differs", base)
		}
		plain := encode(t, p)
		if base == 0 && !slices.Equal(plain, b) {
			t.Fatal("base 0 wrote other bytes than no base")
		}
		if base >= 1<<20 && len(b) >= len(plain) {
			t.Fatalf("base %d: %d bytes, no smaller than %d counted from 0", base, len(b), len(plain))
		}
		if base > 0 {
			// The same bytes read from another base: damage, never other documents.
			var other List
			err := other.ResetBase(b, base-1)
			if err == nil {
				_, err = other.DecodeBlock(0, docs, freqs)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("base %d read from %d: %v, want ErrCorrupt", base, base-1, err)
			}
			if !w.SetBase(base) || !errors.Is(w.Add(base-1, 1), ErrOrder) || w.Len() != 0 {
				t.Fatal("a document below the base accepted")
			}
			w.Reset()
			if err := w.Add(base-1, 1); err != nil { // (Reset set the base back to 0)
				t.Fatalf("after Reset: %v", err)
			}
			w.Reset()
		}
	}
}
