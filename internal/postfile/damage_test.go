package postfile

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// smallFile is a small valid file: multi-chunk terms (empty chunks
// included), inline and non-inline singletons, frequencies and lengths of
// every width.
func smallFile(tb testing.TB) []byte {
	tb.Helper()
	n := 1100
	lengths := make([]uint32, n)
	for d := range lengths {
		lengths[d] = uint32(d * 7 % 300)
	}
	var every, bunch, pair tpost
	every.term, bunch.term, pair.term = []byte("every"), []byte("bunch"), []byte("pair")
	for d := range n {
		every.docs = append(every.docs, uint32(d))
		every.freqs = append(every.freqs, uint32(1+d%5))
		if d < 800 {
			bunch.docs = append(bunch.docs, uint32(d))
			bunch.freqs = append(bunch.freqs, uint32(1+d%70))
		}
	}
	pair.docs, pair.freqs = []uint32{3, 1000}, []uint32{1, 1 << 20}
	terms := []tpost{
		{[]byte("a"), []uint32{17}, []uint32{2}},
		{[]byte("big"), []uint32{9}, []uint32{3 << 30}},
		bunch, every, pair,
		{[]byte("zz"), []uint32{1099}, []uint32{1}},
	}
	return write(tb, corpus{lengths, terms})
}

// TestDamageVerify: every single-byte change (several masks) is reported
// by Open or by Verify, and reading what opens never panics and reports
// only ErrCorrupt.
func TestDamageVerify(t *testing.T) {
	data := smallFile(t)
	if r, err := Open(data); err != nil || r.Check() != nil {
		t.Fatalf("small file: %v", err)
	}
	t.Logf("%d bytes", len(data))
	bad := slices.Clone(data)
	for pos := range data {
		for _, mask := range []byte{0x01, 0x80, 0xff, 0x5a} {
			bad[pos] = data[pos] ^ mask
			r, err := Open(bad)
			if err == nil {
				err = r.Verify()
				if mask == 0x5a { // reading a damaged file: once a byte is enough
					if werr := walk(r); werr != nil && !errors.Is(werr, ErrCorrupt) {
						t.Fatalf("byte %d ^ %#x: walk: %v does not wrap ErrCorrupt", pos, mask, werr)
					}
					if werr := walkSegment(r); werr != nil && !errors.Is(werr, ErrCorrupt) {
						t.Fatalf("byte %d ^ %#x: walkSegment: %v does not wrap ErrCorrupt", pos, mask, werr)
					}
				}
			}
			if err == nil {
				t.Fatalf("byte %d ^ %#x not reported", pos, mask)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d ^ %#x: %v does not wrap ErrCorrupt", pos, mask, err)
			}
		}
		bad[pos] = data[pos]
	}
}

// TestDamageCheck: with the checksum set right again, a change to the
// entries is still found by Check in most cases (it cross-checks counts,
// frontiers and lists), and never panics anything.
func TestDamageCheck(t *testing.T) {
	data := smallFile(t)
	f := parseFooter(data[len(data)-footerSize:])
	rng := rand.New(rand.NewPCG(1, 2))
	found, tries := 0, 0
	for pos := int(f.entriesOff); pos < int(f.entriesOff+f.entryLen); pos++ {
		bad := slices.Clone(data)
		bad[pos] ^= byte(1 + rng.IntN(255))
		fixCRC(bad)
		r, err := Open(bad)
		if err != nil {
			t.Fatal(err)
		}
		tries++
		if err := r.Check(); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d: %v", pos, err)
			}
			found++
		}
	}
	t.Logf("Check found %d of %d changes to entries", found, tries)
	if found < tries*9/10 {
		t.Fatalf("Check found %d of %d", found, tries)
	}
}

// fixCRC rewrites a file's checksum to match its bytes.
func fixCRC(b []byte) {
	end := len(b) - 4
	var s sink
	s.w = &bytes.Buffer{}
	s.write(b[:end])
	b[end], b[end+1], b[end+2], b[end+3] = byte(s.crc), byte(s.crc>>8), byte(s.crc>>16), byte(s.crc>>24)
}

// TestTruncateExtend: Open reports every truncation and extension.
func TestTruncateExtend(t *testing.T) {
	data := smallFile(t)
	for n := range len(data) {
		if _, err := Open(data[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	tails := [][]byte{{0}, make([]byte, 84), data[len(data)-footerSize:], data[len(data)-1:], data}
	for range 50 {
		tail := make([]byte, 1+rng.IntN(200))
		for i := range tail {
			tail[i] = byte(rng.IntN(256))
		}
		tails = append(tails, tail)
	}
	for i, tail := range tails {
		if _, err := Open(append(slices.Clone(data), tail...)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("extension %d (%d bytes): %v", i, len(tail), err)
		}
		// A copy of the file's tail moved in front of it, too.
		if _, err := Open(append(slices.Clone(tail), data...)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix %d (%d bytes): %v", i, len(tail), err)
		}
	}
}

// FuzzOpen: Open arbitrary bytes, then read every term, chunk, frontier,
// length and block without Verify: no panic, and every error wraps
// ErrCorrupt.
func FuzzOpen(f *testing.F) {
	rng := rand.New(rand.NewPCG(5, 6))
	// Small seeds: minimizing an input runs it once a byte.
	lengths := make([]uint32, 1100)
	every := tpost{term: []byte("e")}
	for d := range lengths {
		lengths[d] = uint32(d % 3)
		every.docs = append(every.docs, uint32(d))
		every.freqs = append(every.freqs, 1+uint32(d%129/128))
	}
	f.Add(write(f, corpus{lengths, []tpost{{[]byte("a"), []uint32{5}, []uint32{1}}, {[]byte("b"), []uint32{3, 1000}, []uint32{2, 1 << 31}}, every,
		{[]byte("h"), []uint32{1, 2, 3, 1099}, []uint32{1, 2, 3, 4}}}}))
	f.Add(write(f, genCorpus(rng, genOpts{n: 3, perDoc: 2, vocab: 5, s: 1.1, singletons: 2, everyDoc: 1, extremes: true})))
	f.Add(write(f, genCorpus(rng, genOpts{n: 30, perDoc: 3, vocab: 10, s: 1.2, singletons: 2, everyDoc: 1})))
	f.Add(toVersion2(f, write(f, genCorpus(rng, genOpts{n: 30, perDoc: 3, vocab: 10, s: 1.2, singletons: 2, everyDoc: 1}))))
	f.Add([]byte(headerMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Open(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if err := walk(r); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("walk: %v does not wrap ErrCorrupt", err)
		}
		if err := walkSegment(r); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("segment: %v does not wrap ErrCorrupt", err)
		}
		_ = r.Verify()
	})
}
