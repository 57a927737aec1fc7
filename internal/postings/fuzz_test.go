package postings

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// FuzzOpenDecode feeds arbitrary bytes to OpenList and decodes every block
// of what opens: no panic, errors wrap ErrCorrupt, and a block that
// decodes holds BlockLen(i) <= BlockSize postings whose documents rise
// strictly from above LastDoc(i-1) to exactly LastDoc(i), with freqs >= 1,
// the same that DecodeDocs and Freq read.
func FuzzOpenDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(21, 22))
	seeds := []plist{
		{[]uint32{0}, []uint32{1}},
		{[]uint32{math.MaxUint32}, []uint32{math.MaxUint32}},
		genList(rng, 3, 1000, 300, 2),
		genList(rng, 128, 0, 1, 1),
		genList(rng, 129, 7, 2, 3),
		genList(rng, 300, 0, 1<<20, 1<<12),
	}
	for _, p := range seeds {
		f.Add(encode(f, p))
	}
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Add([]byte{1, 5, 40, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := OpenList(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("OpenList: %v does not wrap ErrCorrupt", err)
			}
			return
		}
		docs, freqs, docs2 := make([]uint32, BlockSize), make([]uint32, BlockSize), make([]uint32, BlockSize)
		total := 0
		for i := range l.Blocks() {
			n, err := l.DecodeBlock(i, docs, freqs)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("block %d: %v does not wrap ErrCorrupt", i, err)
				}
				total += l.BlockLen(i)
				continue
			}
			if n < 1 || n > BlockSize || n != l.BlockLen(i) {
				t.Fatalf("block %d: n = %d, BlockLen %d", i, n, l.BlockLen(i))
			}
			total += n
			prev := int64(-1)
			if i > 0 {
				prev = int64(l.LastDoc(i - 1))
			}
			for k, d := range docs[:n] {
				if int64(d) <= prev {
					t.Fatalf("block %d: doc %d = %d not above %d", i, k, d, prev)
				}
				prev = int64(d)
				if freqs[k] == 0 {
					t.Fatalf("block %d: freq %d is 0", i, k)
				}
			}
			if uint32(prev) != l.LastDoc(i) {
				t.Fatalf("block %d: ends at %d, LastDoc %d", i, prev, l.LastDoc(i))
			}
			// DecodeDocs and Freq read what DecodeBlock does.
			m, err := l.DecodeDocs(i, docs2)
			if err != nil || m != n || !slices.Equal(docs2[:m], docs[:n]) {
				t.Fatalf("block %d: DecodeDocs = %d, %v, differs from DecodeBlock's %d", i, m, err, n)
			}
			for k := range n {
				if f, err := l.Freq(i, k); err != nil || f != freqs[k] {
					t.Fatalf("block %d: Freq(%d) = %d, %v; DecodeBlock read %d", i, k, f, err, freqs[k])
				}
			}
		}
		if total != l.Len() {
			t.Fatalf("blocks hold %d postings, Len %d", total, l.Len())
		}
	})
}
