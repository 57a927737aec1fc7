package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestUnitIDAndSplitUnit(t *testing.T) {
	for _, tc := range []struct {
		uid    string
		parent string
		idx    int
	}{
		{"doc", "doc", -1},
		{"", "", -1},
		{UnitID("doc", 0), "doc", 0},
		{UnitID("doc", 7), "doc", 7},
		{UnitID("doc", 12345), "doc", 12345},
		{UnitID("", 3), "", 3},
		{UnitID("a b/c.md", 2), "a b/c.md", 2},
		{"doc\x00", "doc\x00", -1},             // no number after the NUL
		{"doc\x00x", "doc\x00x", -1},           // not a number
		{"doc\x001\x002", "doc\x001\x002", -1}, // a second NUL: not one of ours
		{"doc\x00 1", "doc\x00 1", -1},
	} {
		parent, idx := SplitUnit(tc.uid)
		if parent != tc.parent || idx != tc.idx {
			t.Errorf("SplitUnit(%q) = %q, %d; want %q, %d", tc.uid, parent, idx, tc.parent, tc.idx)
		}
	}
	if got := UnitID("doc", 3); got != "doc\x003" {
		t.Errorf("UnitID = %q", got)
	}
	// Index ids of different chunks, and of a document and its chunks, never collide, and
	// they sort with their document.
	seen := map[string]bool{"doc": true}
	for i := range 200 {
		u := UnitID("doc", i)
		if seen[u] {
			t.Fatalf("UnitID(doc, %d) = %q collides", i, u)
		}
		seen[u] = true
		if !strings.HasPrefix(u, "doc\x00") || u <= "doc" || u >= "doc\x01" {
			t.Fatalf("UnitID(doc, %d) = %q sorts away from its document", i, u)
		}
	}
}

// TestSplitUnitNonCanonical: an index id is what UnitID makes of a document id and a chunk
// index, so an id after the NUL that UnitID never writes ("-1", "+1", "01") is no chunk of
// the document. SplitUnit hands them to strconv.Atoi, which accepts them: "doc\x00-1" reads
// as the whole document doc (catch-up then puts a unit "doc\x00-1" for it), "doc\x0001" as
// its chunk 1, under another id than chunk 1's.
func TestSplitUnitNonCanonical(t *testing.T) {
	for _, uid := range []string{"doc\x00-1", "doc\x00+1", "doc\x0001", "doc\x00-0"} {
		parent, idx := SplitUnit(uid)
		if idx >= 0 && UnitID(parent, idx) != uid || idx < 0 && parent != uid {
			t.Errorf("SplitUnit(%q) = %q, %d: not the id's own document and chunk", uid, parent, idx)
		}
	}
}

// FuzzSplitUnit: for any string, SplitUnit's answer describes it: a chunk index >= 0 comes
// with the document id before the first NUL and the number after it; -1 with the whole
// string. Ids that UnitID makes split
// back into their parts.
func FuzzSplitUnit(f *testing.F) {
	for _, s := range []string{"doc", "", "doc\x000", "doc\x0017", "doc\x00", "doc\x00x", "a\x001\x002", "é\x009"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, uid string, i int) {
		parent, idx := SplitUnit(uid)
		j := strings.IndexByte(uid, 0)
		switch {
		case idx < -1:
			if j < 0 || parent != uid[:j] {
				t.Fatalf("SplitUnit(%q) = %q, %d", uid, parent, idx)
			}
		case idx == -1:
			if parent != uid && (j < 0 || parent != uid[:j] || strings.TrimLeft(uid[j+1:], "+-0") != "1") {
				t.Fatalf("SplitUnit(%q) = %q, -1: not the whole id", uid, parent)
			}
		default:
			if j < 0 || parent != uid[:j] {
				t.Fatalf("SplitUnit(%q) = %q, %d: the parent is not the id before its NUL", uid, parent, idx)
			}
			if n, err := strconv.Atoi(uid[j+1:]); err != nil || n != idx {
				t.Fatalf("SplitUnit(%q) = %q, %d: not the number after the NUL", uid, parent, idx)
			}
		}
		// What UnitID makes of a document id (no NUL) and a chunk index splits back.
		if strings.IndexByte(uid, 0) < 0 && i >= 0 {
			if p, n := SplitUnit(UnitID(uid, i)); p != uid || n != i {
				t.Fatalf("SplitUnit(UnitID(%q, %d)) = %q, %d", uid, i, p, n)
			}
		}
	})
}

func TestRecordUnits(t *testing.T) {
	text := "0123456789abcdefghij"
	chunked := &Record{Text: text, Chunks: []Chunk{{S: 0, E: 5, H: []string{"H1"}}, {S: 5, E: 12}, {S: 12, E: 20, H: []string{"H1", "H2"}}}}
	plain := &Record{Title: "t", Text: text}

	if got := (*Record)(nil).UnitIDs("x"); got != nil {
		t.Errorf("nil record: %v", got)
	}
	if got := plain.UnitIDs("doc"); !slices.Equal(got, []string{"doc"}) {
		t.Errorf("unchunked: %q", got)
	}
	if got := chunked.UnitIDs("doc"); !slices.Equal(got, []string{"doc\x000", "doc\x001", "doc\x002"}) {
		t.Errorf("chunked: %q", got)
	}
	for u := range 3 {
		if got := plain.UnitIndex(u); got != -1 {
			t.Errorf("unchunked UnitIndex(%d) = %d", u, got)
		}
		if got := chunked.UnitIndex(u); got != u {
			t.Errorf("chunked UnitIndex(%d) = %d", u, got)
		}
	}
	for _, tc := range []struct {
		r          *Record
		i          int
		text       string
		start, end int
		headings   []string
	}{
		{plain, -1, text, 0, 20, nil},
		{plain, 0, text, 0, 20, nil}, // an unchunked record is its own one unit
		{plain, 5, text, 0, 20, nil},
		{chunked, -1, text, 0, 20, nil},
		{chunked, 0, "01234", 0, 5, []string{"H1"}},
		{chunked, 1, "56789ab", 5, 12, nil},
		{chunked, 2, "cdefghij", 12, 20, []string{"H1", "H2"}},
	} {
		s, a, b, h := tc.r.UnitText(tc.i)
		if s != tc.text || a != tc.start || b != tc.end || !slices.Equal(h, tc.headings) {
			t.Errorf("UnitText(%d) of %d chunks = %q [%d,%d) %q; want %q [%d,%d) %q",
				tc.i, len(tc.r.Chunks), s, a, b, h, tc.text, tc.start, tc.end, tc.headings)
		}
	}
	for _, tc := range []struct {
		r    *Record
		idx  int
		want bool
	}{
		{plain, -1, true}, {plain, 0, false}, {plain, 1, false},
		{chunked, -1, false}, {chunked, 0, true}, {chunked, 2, true}, {chunked, 3, false},
	} {
		if got := tc.r.HasUnit(tc.idx); got != tc.want {
			t.Errorf("HasUnit(%d) of %d chunks = %v", tc.idx, len(tc.r.Chunks), got)
		}
	}
	// Every unit id of a record splits back to a unit it has.
	for _, r := range []*Record{plain, chunked} {
		for u, uid := range r.UnitIDs("doc") {
			parent, idx := SplitUnit(uid)
			if parent != "doc" || idx != r.UnitIndex(u) || !r.HasUnit(idx) {
				t.Errorf("unit %d (%q) splits to %q, %d", u, uid, parent, idx)
			}
		}
	}
}

// fieldCombos are records with every combination of the fields set or empty (title, text,
// metadata, chunks; chunks with and without headings).
func fieldCombos() []*Record {
	var out []*Record
	for mask := range 32 {
		r := &Record{}
		if mask&1 != 0 {
			r.Title = "A title — with \"quotes\""
		}
		if mask&2 != 0 {
			r.Text = "Some text, ü and 漢字, a tab\t and a newline\n, <b>&</b>."
		}
		if mask&4 != 0 {
			r.Metadata = map[string]any{"src": "a/b.md", "n": 3.0, "ok": true, "nested": map[string]any{"k": []any{1.0, "x"}}}
		}
		if mask&8 != 0 {
			r.Chunks = []Chunk{{S: 0, E: 4}, {S: 4, E: 9}}
			if mask&16 != 0 {
				r.Chunks[0].H = []string{"Intro", "Part 1"}
			}
		} else if mask&16 != 0 {
			continue // headings without chunks: the same as mask without it
		}
		out = append(out, r)
	}
	return out
}

// TestRecordFieldCombinations: every combination of a record's fields survives the plain
// codec (whole and metadata only), the JSON it stores is encoding/json's (empty fields left
// out but the text), and a store gives it back through every read.
func TestRecordFieldCombinations(t *testing.T) {
	db := openTestDB(t)
	var puts []Put
	for i, r := range fieldCombos() {
		id := fmt.Sprintf("r%02d", i)
		enc, err := EncodeRecord(id, r)
		if err != nil {
			t.Fatal(err)
		}
		if enc[0] != recordMagic {
			t.Fatalf("%s: layout %#x", id, enc[0])
		}
		js, _ := json.Marshal(r)
		if !bytes.Equal(enc[5:], js) {
			t.Fatalf("%s: stores %s, want %s", id, enc[5:], js)
		}
		if !bytes.Contains(js, []byte(`"x":`)) {
			t.Errorf("%s: the text is left out of %s", id, js)
		}
		for key, set := range map[string]bool{`"t":`: r.Title != "", `"m":`: r.Metadata != nil, `"c":`: r.Chunks != nil, `"h":`: r.Chunks != nil && r.Chunks[0].H != nil} {
			if bytes.Contains(js, []byte(key)) != set {
				t.Errorf("%s: %s in %s: %v, want %v", id, key, js, !set, set)
			}
		}
		got, err := DecodeRecord(id, enc)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("%s: DecodeRecord = %+v, %v; want %+v", id, got, err, r)
		}
		meta, err := DecodeMeta(id, enc)
		if err != nil || !reflect.DeepEqual(meta.Metadata, r.Metadata) || !reflect.DeepEqual(meta.Chunks, r.Chunks) {
			t.Fatalf("%s: DecodeMeta = %+v, %v", id, meta, err)
		}
		if meta.Title != "" || meta.Text != "" {
			t.Errorf("%s: DecodeMeta read the title or text (%q, %q): it skips them", id, meta.Title, meta.Text)
		}
		puts = append(puts, Put{ID: id, Record: r, Units: r.UnitIDs(id)})
	}
	units := 0
	for _, p := range puts {
		units += len(p.Units)
	}
	if _, err := db.Write("c", puts, len(puts), units); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := db.View(func(tx *Tx) error {
		return tx.EachRecord("c", false, func(id string, r *Record) error {
			want := puts[n].Record
			n++
			if !reflect.DeepEqual(r, want) {
				return fmt.Errorf("EachRecord %s = %+v, want %+v", id, r, want)
			}
			got, err := tx.Record("c", id)
			if err != nil || !reflect.DeepEqual(got, want) {
				return fmt.Errorf("Record %s = %+v, %v", id, got, err)
			}
			meta, err := tx.RecordMeta("c", id)
			if err != nil || !reflect.DeepEqual(meta.Metadata, want.Metadata) || !reflect.DeepEqual(meta.Chunks, want.Chunks) {
				return fmt.Errorf("RecordMeta %s = %+v, %v", id, meta, err)
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(puts) {
		t.Fatalf("EachRecord read %d records, want %d", n, len(puts))
	}
	c, err := db.LoadCollection("c")
	if err != nil || c.Docs != len(puts) || c.Units != units {
		t.Fatalf("counters %+v, %v; want %d docs, %d units", c, err, len(puts), units)
	}
}

// TestRecordFieldCombinationsCompressed: the same combinations through the compressed
// layout read back as written, whole and metadata only; a record with nothing but a text
// stores no metadata part.
func TestRecordFieldCombinationsCompressed(t *testing.T) {
	recs := make([]*Record, 300)
	for i := range recs {
		recs[i] = zRecord(i)
	}
	db, d := dictDB(t, recs)
	for i, r := range fieldCombos() {
		id := fmt.Sprintf("r%02d", i)
		enc, err := encodeRecordZ(id, r, d)
		if err != nil {
			t.Fatal(err)
		}
		if enc[0] != recordMagicZ {
			t.Fatalf("%s: layout %#x, want compressed", id, enc[0])
		}
		z, err := parseZRecord(id, enc)
		if err != nil {
			t.Fatal(err)
		}
		if hasMeta := r.Metadata != nil || r.Chunks != nil; hasMeta != (len(z.meta) > 0) {
			t.Errorf("%s: metadata part %q", id, z.meta)
		}
		got, err := db.decodeRecord(nil, id, enc, false)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("%s: decoded %+v, %v; want %+v", id, got, err, r)
		}
		meta, err := db.decodeRecord(nil, id, enc, true)
		if err != nil || !reflect.DeepEqual(meta.Metadata, r.Metadata) || !reflect.DeepEqual(meta.Chunks, r.Chunks) || meta.Title != "" || meta.Text != "" {
			t.Fatalf("%s: metadata only %+v, %v", id, meta, err)
		}
		// Without its store, the metadata still reads; the text does not (its dictionary
		// is in the store).
		if m, err := DecodeMeta(id, enc); err != nil || !reflect.DeepEqual(m.Metadata, r.Metadata) {
			t.Fatalf("%s: DecodeMeta without the store: %+v, %v", id, m, err)
		}
		if _, err := DecodeRecord(id, enc); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: DecodeRecord without the store: %v", id, err)
		}
	}
}

// TestRecordEncodeErrors: a record JSON cannot hold (a NaN, a channel in its metadata) is
// an error from EncodeRecord, not ErrCorrupt (nothing is damaged), and a Write of it
// stores nothing.
func TestRecordEncodeErrors(t *testing.T) {
	db := openTestDB(t)
	for name, md := range map[string]map[string]any{
		"NaN":     {"n": nanValue()},
		"channel": {"ch": make(chan int)},
		"func":    {"f": func() {}},
	} {
		r := &Record{Text: "x", Metadata: md}
		if _, err := EncodeRecord("id", r); err == nil || errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: EncodeRecord: %v", name, err)
		}
		if _, err := db.Write("c", []Put{{ID: "id", Record: r, Units: []string{"id"}}}, 1, 1); err == nil || errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Write: %v", name, err)
		}
	}
	if ok, err := db.CollectionExists("c"); err != nil || ok {
		t.Fatalf("a failed write made its collection: %v, %v", ok, err)
	}
}

func nanValue() float64 {
	var zero float64
	return zero / zero
}
