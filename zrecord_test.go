package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/store"
	bolt "go.etcd.io/bbolt"
)

// withCompressMin makes stores compress their records from n documents on for a test.
func withCompressMin(t testing.TB, n int) {
	old := store.SetCompressMin(n)
	t.Cleanup(func() { store.SetCompressMin(old) })
}

// zDoc is document i of the compressed-store tests: every 9th long enough to be chunked,
// every 4th with metadata.
func zDoc(i int) Document {
	var b strings.Builder
	fmt.Fprintf(&b, "Passage %d on zeta%d and theta%d: cells in glucose grow when the receptor binds. ", i, i%17, i%5)
	if i%9 == 0 {
		for j := range 40 {
			fmt.Fprintf(&b, "Sentence %d of a long record about omega%d and kappa. ", j, j%6)
			if j%10 == 9 {
				b.WriteString("\n\n")
			}
		}
	}
	d := Document{ID: fmt.Sprintf("z%04d", i), Title: fmt.Sprintf("Title %d", i), Text: b.String()}
	if i%4 == 0 {
		d.Metadata = map[string]any{"i": float64(i), "source": fmt.Sprintf("f%d.md", i%3)}
	}
	return d
}

// TestSearchWithoutText: WithoutText returns what a search returns but titles, texts and
// snippets (and End for whole documents), and reads no text: on a store whose records are
// compressed, with its dictionary damaged, it still answers while a search that returns
// texts is ErrCorrupt.
func TestSearchWithoutText(t *testing.T) {
	withCompressMin(t, 100)
	dir := t.TempDir()
	m, err := Open(dir, WithNoSync(), WithChunking(ChunkOptions{Budget: 400}))
	if err != nil {
		t.Fatal(err)
	}
	const n = 400
	for lo := 0; lo < n; lo += 50 {
		var docs []Document
		for i := lo; i < lo+50; i++ {
			docs = append(docs, zDoc(i))
		}
		if err := m.Add(bg, docs...); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i += 37 {
		d, err := m.Get(bg, zDoc(i).ID)
		if err != nil || d.Text != zDoc(i).Text || d.Title != zDoc(i).Title {
			t.Fatalf("Get %s: %+v, %v", zDoc(i).ID, d, err)
		}
	}
	queries := []string{"zeta3 theta1", "omega2 kappa", "glucose receptor", "passage 123", "sentence 7 omega4"}
	strip := func(rs []Result) []Result {
		out := make([]Result, len(rs))
		for i, r := range rs {
			r.Title, r.Text, r.Snippet = "", "", ""
			if r.Chunks == 1 {
				r.End = 0
			}
			out[i] = r
		}
		return out
	}
	want := map[string][]Result{}
	chunked := false
	for _, q := range queries {
		for _, k := range []int{10, 50} {
			full, err := m.Search(bg, q, WithMode(BM25), TopK(k))
			if err != nil {
				t.Fatal(err)
			}
			bare, err := m.Search(bg, q, WithMode(BM25), TopK(k), WithoutText(), WithSnippets())
			if err != nil {
				t.Fatal(err)
			}
			if len(full) == 0 {
				t.Fatalf("%q finds nothing", q)
			}
			if !reflect.DeepEqual(strip(full), bare) {
				t.Fatalf("%q k=%d: WithoutText gives\n%+v\nwant\n%+v", q, k, bare, strip(full))
			}
			want[fmt.Sprint(q, k)] = bare
			for _, r := range bare {
				chunked = chunked || (r.Chunks > 1 && r.End > r.Start)
			}
		}
	}
	if !chunked {
		t.Fatal("no chunked document among the results: the test proves less than it says")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Damage the dictionary: one flipped byte in its middle.
	bdb, err := bolt.Open(filepath.Join(dir, dbName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("zdict"))
		if b == nil {
			return errors.New("no dictionary stored")
		}
		k, v := b.Cursor().First()
		v = append([]byte(nil), v...)
		v[len(v)/2] ^= 0x10
		return b.Put(k, v)
	}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	m, err = Open(dir, ReadOnly(), WithChunking(ChunkOptions{Budget: 400}))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, q := range queries {
		for _, k := range []int{10, 50} {
			bare, err := m.Search(bg, q, WithMode(BM25), TopK(k), WithoutText())
			if err != nil || !reflect.DeepEqual(bare, want[fmt.Sprint(q, k)]) {
				t.Fatalf("%q k=%d, dictionary damaged: WithoutText gives %+v, %v", q, k, bare, err)
			}
		}
	}
	if res, err := m.Search(bg, "zeta3 theta1", WithMode(BM25), TopK(50)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a search that reads texts, dictionary damaged: %d results, %v; want ErrCorrupt", len(res), err)
	}
}

// TestStoreSize: a store of 40,000 passages of about 700 bytes (sentences drawn from a
// vocabulary, as a corpus's are), written 10,000 at a time as memory index does, keeps them
// in at most 0.8x the bytes of their titles and texts (pages in use in store.db, with ids,
// metadata, page slack, and the first 10,000 stored plain: 0.69x). Before compressed
// records it took 1.33x.
func TestStoreSize(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 30,000 documents")
	}
	dir := t.TempDir()
	m, err := Open(dir, WithNoSync(), WithChunking(ChunkOptions{Disabled: true}))
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(`cell cells protein receptor binding glucose insulin patients cohort risk
		mortality analysis expression gene mice tumour cancer therapy dose response increase
		decrease significant results study trial treatment levels activity pathway signalling
		the of and in to with was were for by on that this these from as at an be is are which`)
	rng := rand.New(rand.NewSource(7))
	sentence := func() string {
		n := 8 + rng.Intn(14)
		var b strings.Builder
		for j := range n {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.Intn(len(words))])
			if rng.Intn(9) == 0 {
				fmt.Fprintf(&b, " %d", rng.Intn(1000))
			}
		}
		b.WriteString(". ")
		return b.String()
	}
	const n, batch = 40_000, 10_000 // memory index writes 10,000 documents at a time
	text := 0
	for lo := 0; lo < n; lo += batch {
		docs := make([]Document, 0, batch)
		for i := lo; i < lo+batch; i++ {
			var b strings.Builder
			for b.Len() < 650 {
				b.WriteString(sentence())
			}
			d := Document{ID: fmt.Sprintf("p%08d", i), Title: sentence(), Text: b.String(),
				Metadata: map[string]any{"bucket": float64(i % 10)}}
			text += len(d.Title) + len(d.Text)
			docs = append(docs, d)
		}
		if err := m.Add(bg, docs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(filepath.Join(dir, dbName), 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	var used int64
	bdb.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	ratio := float64(used) / float64(text)
	t.Logf("store.db: %d bytes in use for %d bytes of titles and texts (%.2fx, %d B a passage)", used, text, ratio, used/n)
	if ratio > 0.8 {
		t.Errorf("store.db holds %.2fx its documents' text, want <= 0.8x", ratio)
	}
}

// TestCompressedBackupExport: a store whose records are compressed backs up, restores and
// exports its documents as written (the dictionary travels in store.db).
func TestCompressedBackupExport(t *testing.T) {
	withCompressMin(t, 100)
	root := t.TempDir()
	m, err := Open(filepath.Join(root, "a"), WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	for lo := 0; lo < n; lo += 100 {
		var docs []Document
		for i := lo; i < lo+100; i++ {
			docs = append(docs, zDoc(i))
		}
		if err := m.Add(bg, docs...); err != nil {
			t.Fatal(err)
		}
	}
	var bk, ex bytes.Buffer
	if _, err := m.Backup(bg, &bk); err != nil {
		t.Fatal(err)
	}
	st, err := m.Export(bg, &ex)
	if err != nil || st.Documents != n {
		t.Fatalf("export: %+v, %v", st, err)
	}
	m.Close()
	got := map[string]Document{}
	for _, line := range strings.Split(strings.TrimSpace(ex.String()), "\n") {
		var d struct {
			ID    string `json:"id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		got[d.ID] = Document{ID: d.ID, Title: d.Title, Text: d.Text}
	}
	if err := Restore(bg, &bk, filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	bdb, err := bolt.Open(filepath.Join(root, "b", dbName), 0o644, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	bdb.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("zdict")) == nil {
			t.Error("the restored store has no dictionary: its records were not compressed")
		}
		return nil
	})
	bdb.Close()
	r, err := Open(filepath.Join(root, "b"), ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range n {
		want := zDoc(i)
		if e := got[want.ID]; e.Title != want.Title || e.Text != want.Text {
			t.Fatalf("exported %s: %.60q, want %.60q", want.ID, e.Text, want.Text)
		}
		d, err := r.Get(bg, want.ID)
		if err != nil || d.Title != want.Title || d.Text != want.Text {
			t.Fatalf("restored %s: %+v, %v", want.ID, d, err)
		}
	}
}
