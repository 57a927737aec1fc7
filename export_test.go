package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/vectorstore"
)

// exportFixture is a store with vectors in two collections: documents with metadata of
// every kind, sources, one with a precomputed vector, and a long one that is chunked.
func exportFixture(t *testing.T, emb vectorstore.Embedder) *Memory {
	t.Helper()
	ctx := context.Background()
	m := openT(t, filepath.Join(t.TempDir(), "src"), WithEmbedder(emb))
	words := strings.Fields("memory store search vector keyword fusion rank agent recall index backup export import chunk token")
	var docs []Document
	for i := range 120 {
		text := fmt.Sprintf("%s %s about %s and %s, note %d", words[i%len(words)], words[(i*7)%len(words)], words[(i*3)%len(words)], words[(i*5+1)%len(words)], i)
		d := Document{ID: fmt.Sprintf("d%03d", i), Title: "Title " + words[i%len(words)], Text: text,
			Metadata: map[string]any{"n": float64(i), "even": i%2 == 0, "tag": words[i%4], "ratio": float64(i) / 7}}
		if i%10 == 0 {
			d.Source = fmt.Sprintf("file%d.md", i/10)
		}
		docs = append(docs, d)
	}
	vec, err := emb.Embed(ctx, []string{"a vector made elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, Document{ID: "pre", Text: "a document that brought its vector", Embedding: vec[0]})
	if err := m.Add(ctx, docs...); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("A long passage about memory stores and their backups, chunked when added. ", 60)
	if err := m.Collection("notes").Add(ctx,
		Document{ID: "long", Title: "Long", Text: long},
		Document{ID: "n1", Text: "a note about <html> & \"quotes\" \u00e9t\u00e9 \u2603", Metadata: map[string]any{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateCollection("empty"); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestExportImportRoundTrip exports a store with vectors and imports it into a new one:
// the same collections, documents, metadata and vectors, and the same search results in
// every mode (issue 24, point 2).
func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	emb := vectorstore.NewHashEmbedder(48)
	src := exportFixture(t, emb)
	var buf bytes.Buffer
	st, err := src.Export(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if st.Collections != 3 || st.Documents != 123 || st.Vectors != 122 {
		t.Fatalf("export stats %+v, want 3 collections, 123 documents, 122 vectors (the chunked one without)", st)
	}
	dst := openT(t, filepath.Join(t.TempDir(), "dst"), WithEmbedder(emb))
	ist, err := dst.Import(ctx, bytes.NewReader(buf.Bytes()), ImportOptions{BatchSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	if ist.Collections != 3 || ist.Read != 123 || ist.Stored != 123 || ist.Unchanged != 0 {
		t.Fatalf("import stats %+v", ist)
	}
	if got, want := memtest.Collections(t, dst), memtest.Collections(t, src); !reflect.DeepEqual(got, want) {
		t.Fatalf("collections %v, want %v", got, want)
	}
	for _, col := range memtest.Collections(t, src) {
		sc, dc := src.Collection(col), dst.Collection(col)
		if !reflect.DeepEqual(memtest.IDs(t, sc), memtest.IDs(t, dc)) {
			t.Fatalf("collection %s: ids differ", col)
		}
		for _, id := range memtest.IDs(t, sc) {
			a, err := sc.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			b, err := dc.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s/%s: imported %+v, want %+v", col, id, b, a)
			}
			va, _ := sc.Vectors(ctx, id)
			vb, _ := dc.Vectors(ctx, id)
			if !reflect.DeepEqual(va, vb) || len(va) == 0 || va[0] == nil {
				t.Fatalf("%s/%s: vectors differ (%d and %d chunks)", col, id, len(va), len(vb))
			}
		}
	}
	compared := 0
	for _, q := range []string{"memory backup", "vector fusion rank", "note 17", "a vector made elsewhere", "quotes"} {
		for _, mode := range []Mode{Hybrid, BM25, Dense} {
			for _, col := range []string{DefaultCollection, "notes"} {
				a, err := src.Collection(col).Search(ctx, q, TopK(10), WithMode(mode))
				if err != nil {
					t.Fatal(err)
				}
				b, err := dst.Collection(col).Search(ctx, q, TopK(10), WithMode(mode))
				if err != nil {
					t.Fatal(err)
				}
				compared += len(a)
				if len(a) != len(b) {
					t.Fatalf("%q %s in %s: %d results, imported store %d", q, mode, col, len(a), len(b))
				}
				for i := range a {
					if a[i].ID != b[i].ID || a[i].ChunkIndex != b[i].ChunkIndex || a[i].Score != b[i].Score {
						t.Fatalf("%q %s in %s: result %d is %s/%d %v, imported store %s/%d %v", q, mode, col, i, a[i].ID, a[i].ChunkIndex, a[i].Score, b[i].ID, b[i].ChunkIndex, b[i].Score)
					}
				}
			}
		}
	}
	if compared < 150 {
		t.Fatalf("only %d results compared", compared)
	}
	// One collection only.
	var one bytes.Buffer
	if st, err := src.Export(ctx, &one, "notes"); err != nil || st.Collections != 1 || st.Documents != 2 {
		t.Fatalf("export of notes: %+v %v", st, err)
	}
	if _, err := src.Export(ctx, &one, "nope"); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("export of a missing collection: %v", err)
	}
}

// TestImportResume imports an export cut short (a kill mid-file looks the same to the
// store: whole batches stored), then the whole export: the second run writes only what
// the first did not store, and a third writes nothing.
func TestImportResume(t *testing.T) {
	ctx := context.Background()
	emb := vectorstore.NewHashEmbedder(48)
	src := exportFixture(t, emb)
	var buf bytes.Buffer
	if _, err := src.Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	lines := bytes.SplitAfter(full, []byte("\n"))
	cut := bytes.Join(lines[:60], nil) // the header and 59 documents of the default collection
	dst := openT(t, filepath.Join(t.TempDir(), "dst"), WithEmbedder(emb))
	st, err := dst.Import(ctx, bytes.NewReader(cut), ImportOptions{BatchSize: 10})
	if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("import of a cut export: %v, want ErrBadExport (truncated)", err)
	}
	if st.Stored != 59 || memtest.Count(t, dst) != 59 {
		t.Fatalf("cut import stored %d (%d in the store), want the 59 documents read", st.Stored, memtest.Count(t, dst))
	}
	// A document changed since (it is written again) and one deleted (written again).
	if err := dst.Upsert(ctx, Document{ID: "d003", Text: "changed"}); err != nil {
		t.Fatal(err)
	}
	if err := dst.Delete(ctx, "d004"); err != nil {
		t.Fatal(err)
	}
	st, err = dst.Import(ctx, bytes.NewReader(full), ImportOptions{BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if st.Read != 123 || st.Unchanged != 57 || st.Stored != 66 {
		t.Fatalf("resumed import: %+v, want 123 read, 57 unchanged, 66 stored", st)
	}
	st, err = dst.Import(ctx, bytes.NewReader(full), ImportOptions{})
	if err != nil || st.Stored != 0 || st.Unchanged != 123 {
		t.Fatalf("third import: %+v %v, want everything unchanged", st, err)
	}
	if d, _ := dst.Get(ctx, "d003"); d.Text == "changed" {
		t.Fatal("the changed document was not imported again")
	}
}

// TestImportCutMidLine imports an export cut inside a document line (a copy that stopped
// mid-way) and one with a damaged line in its middle: every whole document line before the
// cut (or the bad line) is stored, and the error (ErrBadExport) names the line and the byte
// where the input is cut, and what was stored; names in errors are capped (issue 39).
func TestImportCutMidLine(t *testing.T) {
	ctx := context.Background()
	emb := vectorstore.NewHashEmbedder(48)
	src := exportFixture(t, emb)
	var buf bytes.Buffer
	if _, err := src.Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(buf.Bytes(), []byte("\n"))
	whole := bytes.Join(lines[:60], nil) // the header and 59 documents of the default collection
	cut := append(bytes.Clone(whole), lines[60][:len(lines[60])/2]...)
	dst := openT(t, filepath.Join(t.TempDir(), "dst"), WithEmbedder(emb))
	st, err := dst.Import(ctx, bytes.NewReader(cut), ImportOptions{BatchSize: 1000})
	if !errors.Is(err, ErrBadExport) {
		t.Fatalf("import of an export cut mid-line: %v, want ErrBadExport", err)
	}
	for _, want := range []string{"truncated", fmt.Sprintf("cut at byte %d, inside line 61 (which starts at byte %d", len(cut), len(whole)), "59 documents stored"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
	if st.Stored != 59 || memtest.Count(t, dst) != 59 {
		t.Fatalf("cut import stored %d (%d in the store), want the 59 whole documents before the cut", st.Stored, memtest.Count(t, dst))
	}

	// A damaged line in the middle: the lines before it are stored, none after it.
	bad := bytes.Join(append(append(lines[:30:30], []byte(`{"id": "x", "text": oops}`+"\n")), lines[30:]...), nil)
	dst2 := openT(t, filepath.Join(t.TempDir(), "dst2"), WithEmbedder(emb))
	st, err = dst2.Import(ctx, bytes.NewReader(bad), ImportOptions{BatchSize: 1000})
	if !errors.Is(err, ErrBadExport) || !strings.Contains(err.Error(), "line 31") || strings.Contains(err.Error(), "truncated") {
		t.Fatalf("import with a damaged line 31: %v, want ErrBadExport naming line 31", err)
	}
	if st.Stored != 29 || memtest.Count(t, dst2) != 29 {
		t.Fatalf("import with a damaged line stored %d (%d in the store), want the 29 documents before it", st.Stored, memtest.Count(t, dst2))
	}

	// A long collection name is cut in the error that repeats it.
	long := strings.Repeat("n", 150)
	in := `{"memory_export":{"format":1,"collection":"` + long + `"}}` + "\n" + `{"id":"1","text":"x"}` + "\n"
	_, err = openT(t, "").Import(ctx, strings.NewReader(in), ImportOptions{})
	if !errors.Is(err, ErrBadExport) || strings.Contains(err.Error(), long) || !strings.Contains(err.Error(), "… (150 bytes)") {
		t.Fatalf("import of a truncated collection with a 150-byte name: %v, want the name cut", err)
	}
}

// TestImportRefuses checks the imports that must write nothing: vectors of another
// embedder (the existing typed error), inputs that are not exports, a collection filter.
func TestImportRefuses(t *testing.T) {
	ctx := context.Background()
	src := exportFixture(t, vectorstore.NewHashEmbedder(48))
	var buf bytes.Buffer
	if _, err := src.Export(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		opts  []Option
		input string
		want  error
	}{
		{"another dimension", []Option{WithEmbedder(vectorstore.NewHashEmbedder(32))}, buf.String(), ErrEmbedderMismatch},
		{"no embedder", nil, buf.String(), ErrEmbedderMismatch},
		{"no header", []Option{WithEmbedder(vectorstore.NewHashEmbedder(48))}, `{"id":"1","text":"x"}` + "\n", ErrBadExport},
		{"empty", []Option{WithEmbedder(vectorstore.NewHashEmbedder(48))}, "", ErrBadExport},
		{"not JSON", []Option{WithEmbedder(vectorstore.NewHashEmbedder(48))}, strings.SplitAfter(buf.String(), "\n")[0] + "{oops\n", ErrBadExport},
		{"newer format", []Option{WithEmbedder(vectorstore.NewHashEmbedder(48))}, `{"memory_export":{"format":99,"collection":"x"}}` + "\n", ErrBadExport},
		{"end count wrong", []Option{WithEmbedder(vectorstore.NewHashEmbedder(48))},
			`{"memory_export":{"format":1,"collection":"x"}}` + "\n" + `{"id":"1","text":"x"}` + "\n" + `{"memory_export_end":{"collection":"x","documents":2}}` + "\n", ErrBadExport},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := openT(t, "", tc.opts...)
			_, err := m.Import(ctx, strings.NewReader(tc.input), ImportOptions{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("import: %v, want %v", err, tc.want)
			}
			if tc.want == ErrEmbedderMismatch && memtest.Count(t, m) != 0 {
				t.Fatalf("a refused import stored %d documents", memtest.Count(t, m))
			}
		})
	}
	m := openT(t, "", WithEmbedder(vectorstore.NewHashEmbedder(48)))
	st, err := m.Import(ctx, bytes.NewReader(buf.Bytes()), ImportOptions{Collections: []string{"notes"}})
	if err != nil || st.Stored != 2 || st.Ignored != 121 || memtest.Count(t, m) != 0 || memtest.Count(t, m.Collection("notes")) != 2 {
		t.Fatalf("import of notes only: %+v %v", st, err)
	}
}

// TestParseExportLine holds the hand-parsed vector of a document line to what
// encoding/json makes of the same line, for lines in Export's layout and others.
func TestParseExportLine(t *testing.T) {
	lines := []string{
		`{"id":"1","text":"x","embedding":[0.5,-1,3e-7,0]}`,
		`{"id":"2","text":"x","embedding":[]}`,
		`{"id":"3","text":"has ,\"embedding\":[1,2] inside","metadata":{"k":"v"},"embedding":[1.25, 2]}`,
		`{"embedding":[1,2],"id":"4","text":"key first"}`,
		`{"id":"5","text":"x","embedding":[1,null]}`,
		`{"id":"6","text":"x","embedding":null}`,
		`{"id":"7","text":"x","embedding":[1e50]}`,
		`{"id":"8","text":"x","embedding":[1,"2"]}`,
		`{"id":"9","text":"x","embedding":[1,]}`,
		`{"id":"10","text":"x"}`,
		`{"id":"11","text":"x","metadata":{"embedding":[1]}}`,
		`{"id":"12","text":"x","embedding":[1,2]`,
	}
	for _, l := range lines {
		got := parseExportLine([]byte(l), 1)
		var want importDoc
		werr := json.Unmarshal([]byte(l), &want)
		if (got.err != nil) != (werr != nil) {
			t.Errorf("%s: error %v, encoding/json's %v", l, got.err, werr)
			continue
		}
		if werr != nil {
			if !errors.Is(got.err, ErrBadExport) {
				t.Errorf("%s: %v, want ErrBadExport", l, got.err)
			}
			continue
		}
		if got.doc.ID != want.ID || got.doc.Text != want.Text || !reflect.DeepEqual(got.doc.Metadata, want.Metadata) ||
			!reflect.DeepEqual(got.doc.Embedding, want.Embedding) {
			t.Errorf("%s: decoded %+v, encoding/json %+v", l, got.doc, want)
		}
	}
}

// TestExportKeepsCollectionSettings: an export carries each collection's BM25 analyzer and
// metadata, and an import creates the collection with them (French stemming still finds
// "cheval" in "chevaux"); importing into a collection that exists with another analyzer
// is ErrAnalyzerMismatch.
func TestExportKeepsCollectionSettings(t *testing.T) {
	ctx := context.Background()
	src := openT(t, filepath.Join(t.TempDir(), "src"))
	if _, err := src.CreateCollection("fr", WithCollectionAnalyzer("fr"), WithCollectionMetadata(map[string]any{"lang": "fr", "v": 2.0})); err != nil {
		t.Fatal(err)
	}
	if err := src.Collection("fr").Add(ctx, Document{ID: "fr1", Text: "Les chevaux mangent des pommes."}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := src.Export(ctx, &buf, "fr"); err != nil {
		t.Fatal(err)
	}
	dst := openT(t, filepath.Join(t.TempDir(), "dst"))
	if _, err := dst.Import(ctx, bytes.NewReader(buf.Bytes()), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	c := dst.Collection("fr")
	if got := c.Analyzer(); got != "fr" {
		t.Fatalf("imported analyzer %q, want fr", got)
	}
	md, err := c.Metadata(ctx)
	if err != nil || !reflect.DeepEqual(md, map[string]any{"lang": "fr", "v": 2.0}) {
		t.Fatalf("imported metadata %v, %v", md, err)
	}
	res, err := c.Search(ctx, "cheval", WithMode(BM25))
	if err != nil || len(res) != 1 || res[0].ID != "fr1" {
		t.Fatalf("search after import: %v, %v", res, err)
	}
	other := openT(t, filepath.Join(t.TempDir(), "other"))
	if _, err := other.CreateCollection("fr", WithCollectionAnalyzer("de")); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Import(ctx, bytes.NewReader(buf.Bytes()), ImportOptions{}); !errors.Is(err, ErrAnalyzerMismatch) {
		t.Fatalf("import into a collection with another analyzer: %v, want ErrAnalyzerMismatch", err)
	}
}
