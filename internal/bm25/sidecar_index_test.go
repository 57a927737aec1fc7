package bm25

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// TestRecordIndex holds the sidecar's record index to a map of every term's last record:
// records in short runs (mapped), a long ascending run (searched in place), a later record
// of a term in the run (it wins), terms absent, and the records dropped past an offset.
func TestRecordIndex(t *testing.T) {
	var data []byte
	var terms []string
	record := func(term string) int {
		off := len(data)
		payload := binary.AppendUvarint(nil, uint64(len(term)))
		payload = append(payload, term...)
		data = binary.AppendUvarint(data, uint64(len(payload)))
		data = append(data, payload...)
		data = append(data, 0, 0, 0, 0) // (the CRC: not read by the index)
		terms = append(terms, term)
		return off
	}
	offs := []int{record("m"), record("c")} // out of order: a run of one, then one of one
	for i := range minRun + 36 {
		offs = append(offs, record(fmt.Sprintf("a%03d", i))) // one long run
	}
	offs = append(offs, record("a050"), record("zz"), record("a007")) // appended: short runs
	var x recordIndex
	var prev []byte
	for i, off := range offs {
		term, n := scanSidecarRecord(data[off:])
		if n == 0 || string(term) != terms[i] {
			t.Fatalf("record %d: %q (%d bytes)", i, term, n)
		}
		x.add(data, term, prev, off)
		prev = term
	}
	x.finish(data)
	if len(x.runs) != 1 || len(x.runs[0]) != minRun+36 {
		t.Fatalf("%d runs (want one of %d)", len(x.runs), minRun+36)
	}
	check := func(label string, upTo int) {
		t.Helper()
		want := map[string]int{}
		for i, off := range offs {
			if off < upTo {
				want[terms[i]] = off
			}
		}
		for _, term := range append(append([]string{}, terms...), "", "a", "a0500", "b", "zzz") {
			off, ok := x.find(data, term)
			w, wok := want[term]
			if ok != wok || off != w {
				t.Fatalf("%s: %q found at %d (%v), want %d (%v)", label, term, off, ok, w, wok)
			}
		}
	}
	check("whole", len(data))
	cut := offs[len(offs)-3] // the appended "a050" and after
	x.drop(data, cut)
	check("cut at the appended records", cut)
	cut = offs[40]
	x.drop(data, cut)
	check("cut inside the run", cut)
}
