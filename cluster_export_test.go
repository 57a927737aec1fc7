//go:build weaviate

package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Export of an embedded store, import into the cluster, export of the cluster, import
// into a new embedded store (issue #41, "moving between them"): the run uses the cluster
// started by clusterAddr (cluster_behaviour_test.go).

// exportCorpus is a corpus whose BM25 rankings cannot differ between the embedded store's
// analyzer and Weaviate's word tokenizer: every document of the default collection has 20
// tokens (no stop word, nothing a stemmer changes), and a query word occurs in each
// document that has it a different number of times, so BM25 ranks them by that count on
// both engines whatever their IDF and average length. "notes" holds documents with titles,
// metadata of every kind, a source, and one long enough to be chunked.
func exportCorpus() (flat, notes []Document) {
	words := []struct {
		w     string
		first int
		n     int
	}{{"quokka", 0, 15}, {"wombat", 20, 6}, {"numbat", 30, 10}}
	for i := 0; i < 40; i++ {
		var toks []string
		for _, w := range words {
			if i >= w.first && i < w.first+w.n {
				for k := 0; k <= i-w.first; k++ {
					toks = append(toks, w.w)
				}
			}
		}
		for k := len(toks); k < 20; k++ {
			toks = append(toks, fmt.Sprintf("f%dx%d", i, k))
		}
		flat = append(flat, Document{ID: fmt.Sprintf("b%02d", i), Text: strings.Join(toks, " ")})
	}
	long := strings.Repeat("Otters hold hands while they sleep so that they do not drift apart. ", 200)
	notes = []Document{
		{ID: "n1", Title: "Sea otters", Text: "Sea otters use stones as tools.", Metadata: map[string]any{"kind": "mammal", "year": 2021, "wet": true, "tags": []any{"sea", "tool"}}},
		{ID: "n2", Title: "Herons", Text: "Herons stand still in shallow water.", Metadata: map[string]any{"kind": "bird", "year": 1999.5, "wet": false}, Source: "birds.md"},
		{ID: "n3", Text: "Émeu, ünïcode text; \"quotes\" and <html> & tabs\tinside.", Metadata: map[string]any{"mixed": []any{"a", 1, true}}},
		{ID: "n4", Title: "Long", Text: long, Metadata: map[string]any{"kind": "essay"}},
	}
	return flat, notes
}

// exportDocLines splits an export into its header lines (without "created") and its
// document lines, by collection.
func exportDocLines(t *testing.T, data []byte) (headers map[string]ExportHeader, docs map[string][]string) {
	t.Helper()
	headers, docs = map[string]ExportHeader{}, map[string][]string{}
	col := ""
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var el exportLine
		if strings.HasPrefix(line, `{"memory_export`) {
			if err := json.Unmarshal([]byte(line), &el); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			if el.Header != nil {
				h := *el.Header
				h.Created = time.Time{} // not compared
				col = h.Collection
				headers[col] = h
			}
			continue
		}
		docs[col] = append(docs[col], line)
	}
	return headers, docs
}

func TestClusterExportImport(t *testing.T) {
	co := clusterOpener{addr: clusterAddr(t)}
	ctx := bctx(t)
	flat, notes := exportCorpus()

	emb, err := Open(t.TempDir(), behaviourEmbedder())
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	mustAdd(t, emb, flat...)
	if _, err := emb.CreateCollection("notes"); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, emb.Collection("notes"), notes...)
	var a bytes.Buffer
	sa, err := emb.Export(ctx, &a)
	if err != nil {
		t.Fatal(err)
	}
	total := len(flat) + len(notes)
	if sa.Documents != total || sa.Collections != 2 || sa.Vectors != total-1 {
		t.Fatalf("embedded export: %+v", sa)
	}

	cl := co.open(t, behaviourEmbedder())
	st, err := cl.Import(ctx, bytes.NewReader(a.Bytes()), ImportOptions{BatchSize: 16})
	if err != nil || st.Stored != total || st.Collections != 2 {
		t.Fatalf("import into the cluster: %+v, %v", st, err)
	}
	// Resumable on the cluster too: everything is stored identically, nothing is written.
	st, err = cl.Import(ctx, bytes.NewReader(a.Bytes()), ImportOptions{})
	if err != nil || st.Stored != 0 || st.Unchanged != total {
		t.Fatalf("second import into the cluster: %+v, %v", st, err)
	}

	var b bytes.Buffer
	sb, err := cl.Export(ctx, &b)
	if err != nil || sb != sa {
		t.Fatalf("cluster export: %+v, %v (embedded: %+v)", sb, err, sa)
	}
	ha, da := exportDocLines(t, a.Bytes())
	hb, db := exportDocLines(t, b.Bytes())
	if !reflect.DeepEqual(da, db) {
		for col := range da {
			for i := range da[col] {
				if i >= len(db[col]) || da[col][i] != db[col][i] {
					t.Errorf("collection %s, document %d:\nembedded %.300s\ncluster  %.300s", col, i, da[col][i], strings.Join(db[col][i:min(i+1, len(db[col]))], ""))
					break
				}
			}
		}
		t.Fatal("the cluster's export differs from the embedded store's")
	}
	for col, h := range ha {
		// The cluster's BM25 is no analyzer of this package: its header names none.
		h.Analyzer = ""
		if !reflect.DeepEqual(h, hb[col]) {
			t.Errorf("header of %s: embedded %+v, cluster %+v", col, ha[col], hb[col])
		}
	}

	// And back: a new embedded store imports the cluster's export; its own export holds
	// the same documents, byte for byte.
	back, err := Open(t.TempDir(), behaviourEmbedder())
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if st, err := back.Import(ctx, bytes.NewReader(b.Bytes()), ImportOptions{}); err != nil || st.Stored != total {
		t.Fatalf("import into embedded: %+v, %v", st, err)
	}
	var c bytes.Buffer
	if _, err := back.Export(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if _, dc := exportDocLines(t, c.Bytes()); !reflect.DeepEqual(da, dc) {
		t.Fatal("the round trip's export differs from the first")
	}

	// Get returns the same document, vector included.
	for _, id := range []string{"b07", "n1"} {
		col := ""
		if id[0] == 'n' {
			col = "notes"
		}
		de, err1 := emb.Collection(col).Get(ctx, id)
		dcl, err2 := cl.Collection(col).Get(ctx, id)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(de, dcl) || len(de.Embedding) == 0 {
			t.Errorf("Get %s: embedded %+v (%v)\ncluster %+v (%v)", id, de, err1, dcl, err2)
		}
	}

	// The same queries return the same top-10 ids: dense in the same order (the same
	// vectors: exact search here, HNSW there, on 44 documents); BM25 the same ids, in an
	// order of its own: Weaviate scores BM25 on each shard with that shard's IDF and
	// average length (3 shards on 3 nodes), so a document of a shard where the word is
	// rarer ranks higher there. Each BM25 query here matches at most 10 documents.
	for _, q := range []struct {
		col, query string
		mode       Mode
		want       int // BM25: how many hits (0: not checked)
	}{
		{"", "wombat", BM25, 6}, {"", "numbat", BM25, 10}, {"", "f3x7", BM25, 1}, {"notes", "herons", BM25, 1},
		{"", "quokka", Dense, 0}, {"", "wombat numbat", Dense, 0}, {"", "f12x19 quokka", Dense, 0},
		{"notes", "otters sleeping", Dense, 0}, {"notes", "herons in water", Dense, 0},
	} {
		opts := []SearchOption{WithMode(q.mode), TopK(10)}
		re, err1 := emb.Collection(q.col).Search(ctx, q.query, opts...)
		rc, err2 := cl.Collection(q.col).Search(ctx, q.query, opts...)
		ie, ic := resultIDs(re), resultIDs(rc)
		same := false
		if q.mode == BM25 {
			same = slices.Equal(slices.Sorted(slices.Values(ie)), slices.Sorted(slices.Values(ic)))
		} else {
			same = sameDenseRanking(re, rc)
		}
		if err1 != nil || err2 != nil || !same || len(ie) == 0 || q.want > 0 && len(ie) != q.want {
			t.Errorf("%s %q in %q: embedded %v (%v), cluster %v (%v)", q.mode, q.query, q.col, ie, err1, ic, err2)
		}
	}
	if ids, _ := emb.Search(ctx, "quokka", WithMode(BM25), TopK(3)); !slices.Equal(resultIDs(ids), []string{"b14", "b13", "b12"}) {
		t.Errorf("BM25 quokka: %v, want the documents with the most occurrences first", resultIDs(ids))
	}

	// What a cluster cannot hold is refused, naming it, before anything of it is written.
	for name, hdr := range map[string]string{
		"analyzer": `{"memory_export":{"format":1,"collection":"lucene","analyzer":"en_lucene","created":"2026-01-01T00:00:00Z"}}`,
		"metadata": `{"memory_export":{"format":1,"collection":"meta","metadata":{"owner":"x"},"created":"2026-01-01T00:00:00Z"}}`,
	} {
		in := hdr + "\n" + `{"id":"x","text":"x"}` + "\n" + `{"memory_export_end":{"collection":"x","documents":1}}` + "\n"
		_, err := cl.Import(ctx, strings.NewReader(in), ImportOptions{})
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), name) {
			t.Errorf("import of a collection with %s: %v, want ErrNotSupported naming it", name, err)
		}
	}
	if cols, err := cl.Collections(ctx); err != nil || !slices.Equal(cols, []string{DefaultCollection, "notes"}) {
		t.Errorf("collections after the refused imports: %v, %v", cols, err)
	}
	// A named collection the cluster does not hold is ErrCollectionNotFound.
	if _, err := cl.Export(ctx, &bytes.Buffer{}, "nope"); !errors.Is(err, ErrCollectionNotFound) {
		t.Errorf("export of a missing collection: %v", err)
	}
}

// sameDenseRanking reports whether two dense rankings agree: the same scores (to float32
// precision: Weaviate computes its distances itself) and the same ids in order, except
// among documents of equal score, which either side may order its own way (and of which a
// tie at the end of the list may hold other members).
func sameDenseRanking(a, b []Result) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i].Score-b[i].Score) > 1e-5 {
			return false
		}
	}
	for lo := 0; lo < len(a); {
		hi := lo + 1
		for hi < len(a) && a[hi].Score == a[lo].Score {
			hi++
		}
		if hi < len(a) {
			x, y := resultIDs(a[lo:hi]), resultIDs(b[lo:hi])
			if !slices.Equal(slices.Sorted(slices.Values(x)), slices.Sorted(slices.Values(y))) {
				return false
			}
		}
		lo = hi
	}
	return true
}
