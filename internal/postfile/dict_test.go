package postfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/blevesearch/vellum"
	"github.com/blevesearch/vellum/regexp"
)

// toVersion2 rewrites a file written by this package as the version before wrote it:
// the same sections but the dictionary, a vellum FST of the same terms and values.
func toVersion2(tb testing.TB, data []byte) []byte {
	tb.Helper()
	r, err := Open(data)
	if err != nil {
		tb.Fatal(err)
	}
	var fst bytes.Buffer
	b, err := vellum.New(&fst, nil)
	if err != nil {
		tb.Fatal(err)
	}
	it := r.Iterator(nil, nil)
	for it.next() {
		if err := b.Insert(it.key, it.val); err != nil {
			tb.Fatal(err)
		}
	}
	if it.err != nil {
		tb.Fatal(it.err)
	}
	if err := b.Close(); err != nil {
		tb.Fatal(err)
	}
	f := parseFooter(data[len(data)-footerSize:])
	out := slices.Clone(data[:f.dictOff])
	out = append(out, fst.Bytes()...)
	f.dictLen, f.dictCRC = uint64(fst.Len()), crc32.Checksum(fst.Bytes(), castagnoli)
	out = appendFooter(out, &f)
	binary.LittleEndian.PutUint32(out[len(out)-8:], versionFST)
	out = append(out, 0, 0, 0, 0)
	fixCRC(out)
	return out
}

// TestDictionaryVersions: a file and its version 2 form (an FST dictionary) read the same:
// every term in order, by lookup and by range, automata, Check.
func TestDictionaryVersions(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, o := range []genOpts{
		{n: 50, perDoc: 4, vocab: 30, s: 1.1, singletons: 3, everyDoc: 1},
		{n: 3000, perDoc: 20, vocab: 5000, s: 1.07, singletons: 200, everyDoc: 2, extremes: true},
	} {
		c := genCorpus(rng, o)
		v3 := write(t, c)
		v2 := toVersion2(t, v3)
		r3, r2 := openChecked(t, v3), openChecked(t, v2)
		if r2.fst == nil || r3.bd == nil {
			t.Fatal("not one file of each version")
		}
		terms := func(r *Reader, start, end []byte, aut vellum.Automaton) (out []string) {
			it := r.Iterator(start, end)
			it.aut = aut
			var tm Term
			for {
				k, ok, err := it.Next(&tm)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					return out
				}
				out = append(out, fmt.Sprintf("%s:%d", k, tm.Count()))
			}
		}
		all := terms(r3, nil, nil, nil)
		if len(all) != len(c.terms) || !slices.Equal(all, terms(r2, nil, nil, nil)) {
			t.Fatalf("%d terms, version 2 reads %d, corpus has %d", len(all), len(terms(r2, nil, nil, nil)), len(c.terms))
		}
		// Ranges from and to terms, between terms, past the ends.
		var bounds [][]byte
		bounds = append(bounds, nil, []byte(""), []byte("\xff\xff"))
		for range 40 {
			p := c.terms[rng.IntN(len(c.terms))].term
			bounds = append(bounds, p, append(slices.Clone(p), 0), p[:len(p)/2])
		}
		for _, s := range bounds {
			e := bounds[rng.IntN(len(bounds))]
			if s != nil && e != nil && bytes.Compare(s, e) > 0 {
				s, e = e, s // (an empty range: vellum's iterator returns a term for some)
			}
			if got, want := terms(r3, s, e, nil), terms(r2, s, e, nil); !slices.Equal(got, want) {
				t.Fatalf("[%q, %q): %d terms, version 2 %d", s, e, len(got), len(want))
			}
		}
		for _, re := range []string{"t.*", ".*1", "t[0-9]+5.*", "zz.*", ".*"} {
			aut, err := regexp.New(re)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := terms(r3, nil, nil, aut), terms(r2, nil, nil, aut); !slices.Equal(got, want) {
				t.Fatalf("%s: %d terms, version 2 %d", re, len(got), len(want))
			}
		}
		// Lookups of every term, and of absent ones around them.
		var t3, t2 Term
		for _, p := range c.terms {
			for _, k := range [][]byte{p.term, append(slices.Clone(p.term), 0), p.term[:max(len(p.term)-1, 0)]} {
				ok3, err3 := r3.Term(k, &t3)
				ok2, err2 := r2.Term(k, &t2)
				if err3 != nil || err2 != nil || ok3 != ok2 || (ok3 && t3.Count() != t2.Count()) {
					t.Fatalf("%q: %v %v / version 2 %v %v", k, ok3, err3, ok2, err2)
				}
				d3, d2 := &dictionary{r: r3}, &dictionary{r: r2}
				if a, err := d3.Contains(k); err != nil || a != ok3 {
					t.Fatalf("Contains %q: %v %v", k, a, err)
				}
				if a, err := d2.Contains(k); err != nil || a != ok2 {
					t.Fatalf("version 2 Contains %q: %v %v", k, a, err)
				}
			}
		}
	}
}

// TestDictionaryDamage: every byte of a block dictionary changed, with the file's
// checksums made to match: Open, lookups, iteration and Check report ErrCorrupt or read
// on, never panic; Check finds most changes.
func TestDictionaryDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	data := write(t, genCorpus(rng, genOpts{n: 300, perDoc: 6, vocab: 400, s: 1.1, singletons: 20, everyDoc: 1}))
	f := parseFooter(data[len(data)-footerSize:])
	found := 0
	for i := f.dictOff; i < f.dictOff+f.dictLen; i++ {
		b := slices.Clone(data)
		b[i] ^= byte(1 + rng.IntN(255))
		dict := b[f.dictOff : f.dictOff+f.dictLen]
		binary.LittleEndian.PutUint32(b[len(b)-footerSize+64:], crc32.Checksum(dict, castagnoli))
		fixCRC(b)
		r, err := Open(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d: Open: %v", i, err)
			}
			found++
			continue
		}
		if err := walk(r); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d: %v", i, err)
			}
			found++
		}
	}
	t.Logf("%d of %d changed bytes found", found, f.dictLen)
	if found < int(f.dictLen)*3/4 {
		t.Fatalf("found %d of %d", found, f.dictLen)
	}
}
