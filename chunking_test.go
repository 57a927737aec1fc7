package memory

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/chunker"
	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/internal/snippet"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/vectorstore"
)

var fillerWords = strings.Fields(`river stone window garden letter silver market engine harbor
	forest candle mirror ladder pocket thunder meadow copper lantern velvet orchard canyon
	saddle marble kettle compass blanket tunnel falcon cotton glacier`)

// prose returns about n bytes of sentences made of filler words, in paragraphs.
func prose(seed int64, n int) string {
	rng := rand.New(rand.NewSource(seed))
	var b strings.Builder
	for b.Len() < n {
		words := 6 + rng.Intn(10)
		for i := 0; i < words; i++ {
			w := fillerWords[rng.Intn(len(fillerWords))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		b.WriteString(". ")
		if rng.Intn(5) == 0 {
			b.WriteString("\n\n")
		}
	}
	return b.String()
}

// colIndexCounts returns the collection's document count, chunk count, and the number of
// entries in its BM25 and vector indexes (-1 without a vector index).
func colIndexCounts(t *testing.T, c *Collection) (docs, units, bm25, vec int) {
	t.Helper()
	s, err := c.state(false)
	if err != nil || s == nil {
		t.Fatalf("collection %q: %v", c.name, err)
	}
	unlock, err := c.m.reg.rlockOpen(s)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	n, err := s.bm25.Count()
	if err != nil {
		t.Fatal(err)
	}
	vec = -1
	if s.vec != nil {
		vec = s.vec.Len()
	}
	total, ndocs := 0, 0
	if err := c.m.forEachRecord(c.name, func(_ string, r *store.Record) {
		total += max(1, len(r.Chunks))
		ndocs++
	}); err != nil {
		t.Fatal(err)
	}
	if total != s.Units || ndocs != s.Docs {
		t.Fatalf("counters: %d units, %d docs; records hold %d, %d", s.Units, s.Docs, total, ndocs)
	}
	return s.Docs, s.Units, int(n), vec
}

// storedRecord reads a document's record from the store of record (nil when absent).
func storedRecord(t *testing.T, c *Collection, id string) *store.Record {
	t.Helper()
	var r *store.Record
	if err := c.m.db.View(func(tx *store.Tx) error {
		var err error
		r, err = tx.Record(c.name, id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return r
}

func chunksOf(t *testing.T, c *Collection, id string) []store.Chunk {
	t.Helper()
	r := storedRecord(t, c, id)
	if r == nil {
		t.Fatalf("%s not stored", id)
	}
	return r.Chunks
}

func TestChunkOnAdd(t *testing.T) {
	md := "# Guide\n\nIntro text about the guide.\n\n## Install\n\n" + prose(1, 3000) +
		"\n\n## Configure\n\n" + prose(2, 3000) + " The zephyrword setting lives here.\n"
	goSrc := "package demo\n\n" + strings.Repeat("", 0)
	for i := 0; i < 40; i++ {
		goSrc += fmt.Sprintf("// F%d does thing %d.\nfunc F%d(a, b int) int {\n\tx := a + b*%d\n\tif x > %d {\n\t\treturn x - %d\n\t}\n\treturn x\n}\n\n", i, i, i, i, i, i)
	}
	tests := []struct {
		name       string
		doc        Document
		wantChunks bool
		budget     int // largest chunk in non-whitespace characters
		heading    string
		code       bool
	}{
		{"short prose stays whole", Document{ID: "short", Text: "A short note."}, false, 0, "", false},
		{"long plain prose", Document{ID: "plain", Title: "Plain", Text: prose(3, 20000)}, true, chunker.DefaultTextBudget, "", false},
		{"markdown keeps headings", Document{ID: "md", Text: md, Source: "docs/guide.md"}, true, chunker.DefaultTextBudget, "Configure", false},
		{"code by source extension", Document{ID: "code-ext", Text: goSrc, Source: "pkg/demo.go"}, true, chunker.DefaultBudget, "", true},
		{"code by metadata language", Document{ID: "code-meta", Text: goSrc, Metadata: map[string]any{"language": "go"}}, true, chunker.DefaultBudget, "", true},
		{"precomputed embedding is never chunked", Document{ID: "pre", Text: prose(4, 20000)}, false, 0, "", false},
	}
	e := vectorstore.NewHashEmbedder(32)
	m := openT(t, "", WithEmbedder(e))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.doc.ID == "pre" {
				v, _ := e.Embed(bg, []string{"x"})
				tc.doc.Embedding = v[0]
			}
			if err := m.Add(bg, tc.doc); err != nil {
				t.Fatal(err)
			}
			chunks := chunksOf(t, m.Collection(""), tc.doc.ID)
			if got := len(chunks) > 1; got != tc.wantChunks {
				t.Fatalf("chunked = %v (%d chunks), want %v", got, len(chunks), tc.wantChunks)
			}
			d, err := m.Get(bg, tc.doc.ID)
			if err != nil || d.Text != tc.doc.Text {
				t.Fatalf("Get does not return the whole document: %v", err)
			}
			if !tc.wantChunks {
				return
			}
			prev := 0
			sawHeading := false
			for i, c := range chunks {
				if c.S < prev || c.E <= c.S || c.E > len(tc.doc.Text) {
					t.Fatalf("chunk %d [%d,%d) out of order (prev end %d)", i, c.S, c.E, prev)
				}
				prev = c.E
				text := tc.doc.Text[c.S:c.E]
				if nws := len(strings.Join(strings.Fields(text), "")); nws > tc.budget {
					t.Fatalf("chunk %d has %d non-whitespace bytes, budget %d", i, nws, tc.budget)
				}
				for _, h := range c.H {
					if h == tc.heading {
						sawHeading = true
					}
				}
			}
			if tc.heading != "" && !sawHeading {
				t.Fatalf("no chunk has heading %q: %+v", tc.heading, chunks)
			}
			if tc.code {
				// The code chunker cuts between functions: every chunk but the first starts
				// with a doc comment or a func.
				for i, c := range chunks[1:] {
					if s := strings.TrimSpace(tc.doc.Text[c.S:c.E]); !strings.HasPrefix(s, "// F") && !strings.HasPrefix(s, "func ") {
						t.Fatalf("code chunk %d starts mid-function: %q", i+1, s[:min(40, len(s))])
					}
				}
			}
		})
	}
	// Searching the markdown document returns the chunk, its offsets, headings and parent.
	res, err := m.Search(bg, "zephyrword setting", WithMode(BM25), TopK(1))
	if err != nil || len(res) != 1 {
		t.Fatalf("search: %v %v", ids(res), err)
	}
	r := res[0]
	if r.ID != "md" || r.Source != "docs/guide.md" || r.Chunks < 2 ||
		md[r.Start:r.End] != r.Text || !strings.Contains(r.Text, "zephyrword") ||
		len(r.Headings) == 0 || r.Headings[len(r.Headings)-1] != "Configure" {
		t.Fatalf("result %+v", r)
	}
	if docs, units, bm25, vec := colIndexCounts(t, m.Collection("")); bm25 != units || vec != units || docs != len(tests) {
		t.Fatalf("docs %d units %d bm25 %d vectors %d", docs, units, bm25, vec)
	}
}

func TestChunkBudgetFromEmbedder(t *testing.T) {
	tests := []struct {
		name string
		opts ChunkOptions
		emb  vectorstore.Embedder
		want int
	}{
		{"default", ChunkOptions{}, nil, chunker.DefaultTextBudget},
		{"explicit", ChunkOptions{Budget: 300}, nil, 300},
		{"small window", ChunkOptions{}, maxLenEmbedder{vectorstore.NewHashEmbedder(8), 128}, 378},
		{"large window", ChunkOptions{}, maxLenEmbedder{vectorstore.NewHashEmbedder(8), 512}, chunker.DefaultTextBudget},
		{"explicit wins", ChunkOptions{Budget: 900}, maxLenEmbedder{vectorstore.NewHashEmbedder(8), 128}, 900},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &Memory{opts: Options{Chunking: tc.opts, Embedder: tc.emb}}
			if got, _ := (docWrites{m}).chunkBudgets(); got != tc.want {
				t.Fatalf("prose budget %d, want %d", got, tc.want)
			}
		})
	}
}

type maxLenEmbedder struct {
	vectorstore.Embedder
	n int
}

func (e maxLenEmbedder) MaxLength() int { return e.n }

// TestUpsertLeavesNoStaleChunk re-adds an edited long document (shorter, without the word
// its tail had) and checks that no index still holds an old chunk, before and after reopen.
func TestUpsertLeavesNoStaleChunk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	e := vectorstore.NewHashEmbedder(32)
	m := openT(t, dir, WithEmbedder(e))
	long := prose(5, 30000) + " The quokkaword appears only in the first version."
	if err := m.Upsert(bg, Document{ID: "doc", Title: "Doc", Text: long, Source: "a.txt"}); err != nil {
		t.Fatal(err)
	}
	n1 := len(chunksOf(t, m.Collection(""), "doc"))
	check := func(m *Memory, stage string, wantDocs int) {
		t.Helper()
		for _, mode := range []Mode{BM25, Dense, Hybrid} {
			res, err := m.Search(bg, "quokkaword appears only in the first version", WithMode(mode), WithAllChunks(), TopK(1000))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if strings.Contains(r.Text, "quokkaword") {
					t.Fatalf("%s: %s search still finds the old chunk %d", stage, mode, r.ChunkIndex)
				}
				if r.ChunkIndex >= r.Chunks {
					t.Fatalf("%s: chunk %d of %d", stage, r.ChunkIndex, r.Chunks)
				}
			}
		}
		docs, units, bm25, vec := colIndexCounts(t, m.Collection(""))
		if docs != wantDocs || bm25 != units || vec != units {
			t.Fatalf("%s: docs %d units %d bm25 %d vectors %d", stage, docs, units, bm25, vec)
		}
	}
	// Long -> shorter long.
	if err := m.Upsert(bg, Document{ID: "doc", Title: "Doc", Text: prose(6, 12000), Source: "a.txt"}); err != nil {
		t.Fatal(err)
	}
	if n2 := len(chunksOf(t, m.Collection(""), "doc")); n2 >= n1 || n2 < 2 {
		t.Fatalf("chunks %d -> %d", n1, n2)
	}
	check(m, "after upsert", 1)
	// Long -> short (one chunk: the document itself) -> long again.
	if err := m.Upsert(bg, Document{ID: "doc", Text: "now a short note"}); err != nil {
		t.Fatal(err)
	}
	check(m, "after shrinking to one chunk", 1)
	if err := m.Upsert(bg, Document{ID: "doc", Title: "Doc", Text: prose(7, 9000)}); err != nil {
		t.Fatal(err)
	}
	if res, _ := m.Search(bg, "short note", WithMode(BM25), WithAllChunks()); len(res) != 0 && strings.Contains(res[0].Text, "short note") {
		t.Fatal("the one-chunk version is still indexed")
	}
	check(m, "after growing again", 1)
	m.Close()

	m2 := openT(t, dir, WithEmbedder(e))
	check(m2, "after reopen", 1)
	m2.Close()
	// Indexes rebuilt from the store of record hold the same chunks.
	os.RemoveAll(filepath.Join(dir, bm25Dir))
	os.RemoveAll(filepath.Join(dir, vecDir))
	m3 := openT(t, dir, WithEmbedder(e))
	check(m3, "after rebuild", 1)
	if err := m3.Delete(bg, "doc"); err != nil {
		t.Fatal(err)
	}
	check(m3, "after delete", 0)
}

// TestLongDocumentTailPhrase: a phrase at the tail of a 500 KB document is found by BM25 as
// the right chunk, with a snippet, and no result is longer than a chunk.
func TestLongDocumentTailPhrase(t *testing.T) {
	m := openT(t, "")
	big := prose(8, 500<<10)
	tail := " The albatross migration ledger is kept in the lighthouse."
	big += tail + " " + prose(9, 300)
	docs := []Document{{ID: "big", Title: "Big changelog", Text: big, Source: "CHANGELOG.md"}}
	for i := 0; i < 20; i++ {
		docs = append(docs, Document{ID: fmt.Sprint("other", i), Text: prose(int64(100+i), 4000)})
	}
	if err := m.Add(bg, docs...); err != nil {
		t.Fatal(err)
	}
	res, err := m.Search(bg, "albatross migration ledger lighthouse", WithMode(BM25), TopK(3), WithSnippets())
	if err != nil || len(res) == 0 {
		t.Fatalf("search: %v %v", ids(res), err)
	}
	r := res[0]
	at := strings.Index(big, "albatross")
	if r.ID != "big" || r.Start > at || r.End < at || !strings.Contains(r.Text, "albatross migration ledger") || r.Start < 400<<10 {
		t.Fatalf("top result %s chunk %d [%d,%d), phrase at %d", r.ID, r.ChunkIndex, r.Start, r.End, at)
	}
	if !strings.Contains(r.Snippet, "albatross migration ledger") || len(r.Snippet) > snippet.Bytes {
		t.Fatalf("snippet %q", r.Snippet)
	}
	for _, r := range res {
		if nws := len(strings.Join(strings.Fields(r.Text), "")); nws > chunker.DefaultTextBudget {
			t.Fatalf("result %s has %d non-whitespace bytes", r.ID, nws)
		}
	}
	// Best chunk per parent by default; every chunk with WithAllChunks.
	res, _ = m.Search(bg, "lantern orchard", WithMode(BM25), TopK(100))
	seen := map[string]bool{}
	for _, r := range res {
		if seen[r.ID] {
			t.Fatalf("document %s returned twice without WithAllChunks", r.ID)
		}
		seen[r.ID] = true
	}
	if len(res) != len(docs) {
		t.Fatalf("%d distinct documents, want %d", len(res), len(docs))
	}
	all, _ := m.Search(bg, "lantern orchard", WithMode(BM25), TopK(100), WithAllChunks())
	if len(all) != 100 {
		t.Fatalf("WithAllChunks returned %d", len(all))
	}
}

func TestDeleteWhereAndSources(t *testing.T) {
	m := openT(t, "")
	docs := []Document{
		{ID: "a1", Text: prose(10, 5000), Source: "dir/a.md"},
		{ID: "a2", Text: "part two of a", Source: "dir/a.md"},
		{ID: "b1", Text: "b text", Source: "dir/b.md", Metadata: map[string]any{"year": 2020}},
		{ID: "c1", Text: "c text", Metadata: map[string]any{"year": 2024}},
	}
	if err := m.Add(bg, docs...); err != nil {
		t.Fatal(err)
	}
	if d, _ := m.Get(bg, "a2"); d.Source != "dir/a.md" || d.Metadata["source"] != "dir/a.md" {
		t.Fatalf("Get source %+v", d)
	}
	srcs, err := m.Collection("").Sources(bg)
	if err != nil || fmt.Sprint(srcs) != "[dir/a.md dir/b.md]" {
		t.Fatalf("Sources = %v, %v", srcs, err)
	}
	tests := []struct {
		name    string
		where   Where
		want    int
		err     error
		remains string
	}{
		{"empty filter", Where{}, 0, ErrInvalidFilter, "[a1 a2 b1 c1]"},
		{"bad filter", Where{"year": map[string]any{"$bogus": 1}}, 0, ErrInvalidFilter, "[a1 a2 b1 c1]"},
		{"no match", Where{"source": "dir/zzz.md"}, 0, nil, "[a1 a2 b1 c1]"},
		{"by source", Where{"source": "dir/a.md"}, 2, nil, "[b1 c1]"},
		{"by metadata", Where{"year": map[string]any{"$gte": 2023}}, 1, nil, "[b1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := m.DeleteWhere(bg, tc.where)
			if !errors.Is(err, tc.err) || n != tc.want {
				t.Fatalf("DeleteWhere = %d, %v; want %d, %v", n, err, tc.want, tc.err)
			}
			if got := fmt.Sprint(memtest.IDs(t, m.Collection(""))); got != tc.remains {
				t.Fatalf("left %s, want %s", got, tc.remains)
			}
		})
	}
	res, _ := m.Search(bg, "lantern part two", WithMode(BM25), WithAllChunks())
	if len(res) != 0 {
		t.Fatalf("deleted chunks still found: %v", ids(res))
	}
	if docs, units, bm25, _ := colIndexCounts(t, m.Collection("")); docs != 1 || units != 1 || bm25 != 1 {
		t.Fatalf("docs %d units %d bm25 %d", docs, units, bm25)
	}
	if _, err := m.Collection("nope").DeleteWhere(bg, Where{"source": "x"}); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("DeleteWhere on a missing collection: %v", err)
	}
	if _, err := m.Collection("nope").Sources(bg); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("Sources on a missing collection: %v", err)
	}
	err = m.Add(bg, Document{ID: "x", Text: "x", Source: "p", Metadata: map[string]any{"source": "q"}})
	if !errors.Is(err, ErrInvalidMetadata) {
		t.Fatalf("conflicting source: %v", err)
	}
	if err := m.Add(bg, Document{ID: "y", Text: "y", Source: "p", Metadata: map[string]any{"source": "p"}}); err != nil {
		t.Fatalf("agreeing source: %v", err)
	}
	if err := m.Add(bg, Document{ID: "bad\x00id", Text: "y"}); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("NUL in id: %v", err)
	}
}

func TestCollectionsAPI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	m := openT(t, dir)
	if _, err := m.GetCollection("typo"); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("GetCollection(typo): %v", err)
	}
	if _, err := m.GetCollection(""); err != nil {
		t.Fatalf("the default collection always exists: %v", err)
	}
	if _, err := m.Search(bg, "x"); err != nil {
		t.Fatalf("searching the empty default collection: %v", err)
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"search", func() error { _, err := m.Collection("typo").Search(bg, "x"); return err }},
		{"in collections", func() error {
			_, err := m.Search(bg, "x", InCollections(map[string]float64{"typo": 1}))
			return err
		}},
		{"get", func() error { _, err := m.Collection("typo").Get(bg, "1"); return err }},
		{"delete collection", func() error { return m.DeleteCollection(bg, "typo") }},
	} {
		if err := tc.call(); !errors.Is(err, ErrCollectionNotFound) {
			t.Fatalf("%s on a missing collection: %v", tc.name, err)
		}
	}
	if _, err := m.Collection("typo").Get(bg, "1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get in a missing collection should also be ErrNotFound: %v", err)
	}
	if _, err := m.CreateCollection("a\x01"); !errors.Is(err, ErrInvalidCollection) {
		t.Fatalf("bad name: %v", err)
	}
	empty, err := m.CreateCollection("empty")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := m.CreateCollection("empty"); err != nil || again.Name() != "empty" {
		t.Fatalf("create-or-get: %v", err)
	}
	if res, err := empty.Search(bg, "x"); err != nil || len(res) != 0 {
		t.Fatalf("search of an empty collection: %v %v", res, err)
	}
	notes, _ := m.GetCollection("empty")
	_ = notes
	if err := m.Collection("notes").Add(bg, Document{ID: "n1", Text: "remember the milk"}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(memtest.Collections(t, m)); got != "[empty notes]" {
		t.Fatalf("Collections = %s", got)
	}
	if err := m.DeleteCollection(bg, "notes"); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(memtest.Collections(t, m)); got != "[empty]" {
		t.Fatalf("Collections after delete = %s", got)
	}
	if _, err := m.Collection("notes").Search(bg, "milk"); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("search of a deleted collection: %v", err)
	}
	// Writing the name again starts an empty collection: nothing of the old one is found.
	if err := m.Collection("notes").Add(bg, Document{ID: "n2", Text: "buy bread"}); err != nil {
		t.Fatal(err)
	}
	if res, _ := m.Collection("notes").Search(bg, "milk"); len(res) != 0 {
		t.Fatalf("old documents came back: %v", ids(res))
	}
	m.Close()
	m2 := openT(t, dir)
	if got := fmt.Sprint(memtest.Collections(t, m2)); got != "[empty notes]" {
		t.Fatalf("Collections after reopen = %s", got)
	}
	if got := fmt.Sprint(memtest.IDs(t, m2.Collection("notes"))); got != "[n2]" {
		t.Fatalf("notes after reopen = %s", got)
	}
	if res, _ := m2.Collection("notes").Search(bg, "milk"); len(res) != 0 {
		t.Fatalf("old documents came back after reopen: %v", ids(res))
	}
}

func TestOpenExisting(t *testing.T) {
	root := t.TempDir()
	store := filepath.Join(root, "store")
	m := openT(t, store)
	m.Add(bg, Document{ID: "1", Text: "kept"})
	m.Close()
	emptyDir := filepath.Join(root, "empty")
	os.Mkdir(emptyDir, 0o755)
	foreign := filepath.Join(root, "foreign")
	os.Mkdir(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("x"), 0o644)
	noDB := filepath.Join(root, "nodb")
	os.Mkdir(noDB, 0o755)
	data, _ := os.ReadFile(filepath.Join(store, manifestName))
	os.WriteFile(filepath.Join(noDB, manifestName), data, 0o644)
	file := filepath.Join(root, "file")
	os.WriteFile(file, []byte("x"), 0o644)

	tests := []struct {
		name string
		dir  string
		err  error
	}{
		{"missing", filepath.Join(root, "typo"), ErrStoreNotFound},
		{"empty name", "", ErrStoreNotFound},
		{"empty dir", emptyDir, ErrStoreNotFound},
		{"manifest without database", noDB, ErrStoreNotFound},
		{"foreign dir", foreign, ErrNotAStore},
		{"a file", file, ErrNotAStore},
		{"store", store, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := listTree(t, root)
			m, err := OpenExisting(tc.dir)
			if !errors.Is(err, tc.err) {
				t.Fatalf("OpenExisting(%s) = %v, want %v", tc.dir, err, tc.err)
			}
			if err != nil {
				if after := listTree(t, root); after != before {
					t.Fatalf("a failed OpenExisting changed files:\n%s\n->\n%s", before, after)
				}
				return
			}
			defer m.Close()
			if d, err := m.Get(bg, "1"); err != nil || d.Text != "kept" {
				t.Fatalf("Get = %+v, %v", d, err)
			}
		})
	}
}

func listTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(root, p)
			b.WriteString(rel + "\n")
		}
		return nil
	})
	return b.String()
}

func TestRememberedEmbedder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	e := vectorstore.NewHashEmbedder(32)
	m := openT(t, dir, WithEmbedder(e))
	if err := m.Add(bg, corpus...); err != nil {
		t.Fatal(err)
	}
	m.Close()

	var asked []string
	resolver := func(ctx context.Context, id string, dim int) (vectorstore.Embedder, error) {
		asked = append(asked, fmt.Sprintf("%s/%d", id, dim))
		if id == e.ID() && dim == e.Dim() {
			return vectorstore.NewHashEmbedder(dim), nil
		}
		return nil, fmt.Errorf("unknown model %q", id)
	}
	// A store reopened with no options resolves its embedder from the registry (the
	// hashing embedder is built in) and answers hybrid searches; when it cannot be loaded
	// a hybrid search runs as BM25 and says why, a dense search and a write fail naming
	// the model, with one "memory:" in the message.
	tests := []struct {
		name     string
		opts     []Option
		openErr  error
		degraded string // the note of a hybrid search run as BM25 ("": a real hybrid)
		embedded bool   // the resolved embedder is in use
	}{
		{"resolved", []Option{WithEmbedderResolver(resolver)}, nil, "", true},
		{"no options: the registry resolves it", nil, nil, "", true},
		{"explicit embedder wins", []Option{WithEmbedder(e), WithEmbedderResolver(func(context.Context, string, int) (vectorstore.Embedder, error) {
			t.Fatal("resolver called although an embedder is configured")
			return nil, nil
		})}, nil, "", true},
		{"resolver fails", []Option{WithEmbedderResolver(func(context.Context, string, int) (vectorstore.Embedder, error) {
			return nil, errors.New("model not in cache")
		})}, nil, "model not in cache", false},
		{"resolution off", []Option{WithoutEmbedderResolver()}, nil, "WithoutEmbedderResolver", false},
		{"resolver returns another model", []Option{WithEmbedderResolver(func(context.Context, string, int) (vectorstore.Embedder, error) {
			return vectorstore.NewHashEmbedder(64), nil
		})}, ErrEmbedderMismatch, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Open(dir, tc.opts...)
			if !errors.Is(err, tc.openErr) {
				t.Fatalf("Open: %v, want %v", err, tc.openErr)
			}
			if err != nil {
				return
			}
			defer m.Close()
			if id, dim, ok := m.StoredEmbedder(); !ok || id != e.ID() || dim != 32 {
				t.Fatalf("StoredEmbedder = %s %d %v", id, dim, ok)
			}
			res, err := m.Search(bg, "web browser language")
			if err != nil {
				t.Fatalf("hybrid search: %v", err)
			}
			if tc.degraded != "" {
				if len(res) == 0 || res[0].Explain.Mode != BM25 || res[0].Explain.Dense != nil {
					t.Fatalf("hybrid search without the model: %+v, want BM25 results", res)
				}
				note := strings.Join(res[0].Explain.Notes, "; ")
				if !strings.Contains(note, "degraded to bm25") || !strings.Contains(note, e.ID()) || !strings.Contains(note, tc.degraded) {
					t.Fatalf("the note does not say why (%q): %q", tc.degraded, note)
				}
				for _, op := range []func() error{
					func() error { _, err := m.Search(bg, "web browser", WithMode(Dense)); return err },
					func() error { return m.Add(bg, Document{ID: "new", Text: "x"}) },
				} {
					err := op()
					if !errors.Is(err, ErrEmbedderNeeded) || !errors.Is(err, ErrNoEmbedder) || !strings.Contains(err.Error(), e.ID()) ||
						!strings.Contains(err.Error(), tc.degraded) || strings.Count(err.Error(), "memory:") != 1 {
						t.Fatalf("dense search or write without the embedder: %v", err)
					}
				}
				return
			}
			if (m.Embedder() != nil) != tc.embedded || len(res) == 0 || res[0].ID != "js" || res[0].Explain.Dense == nil || res[0].Explain.Mode != Hybrid {
				t.Fatalf("hybrid result %+v", res)
			}
		})
	}
	if len(asked) != 1 || asked[0] != e.ID()+"/32" { // the first case's resolver only
		t.Fatalf("resolver asked for %v", asked)
	}
}

func TestReEmbedChunkedDocuments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	m := openT(t, dir, WithEmbedder(vectorstore.NewHashEmbedder(32)))
	text := prose(11, 8000) + " Unique tail sentence about the pelican observatory. " + prose(12, 2000)
	if err := m.Add(bg, Document{ID: "long", Text: text}, Document{ID: "short", Text: "a short one"}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	var last [2]int
	m2 := openT(t, dir, WithEmbedder(vectorstore.NewHashEmbedder(64)), WithReEmbed(func(done, total int) { last = [2]int{done, total} }))
	if last != [2]int{2, 2} {
		t.Fatalf("last progress %v, want [2 2] (documents, not chunks)", last)
	}
	docs, units, bm25, vec := colIndexCounts(t, m2.Collection(""))
	if docs != 2 || units < 4 || bm25 != units || vec != units {
		t.Fatalf("docs %d units %d bm25 %d vectors %d", docs, units, bm25, vec)
	}
	// Every chunk's stored vector is the new embedder's vector of that chunk.
	e := vectorstore.NewHashEmbedder(64)
	for _, id := range []string{"long", "short"} {
		r := storedRecord(t, m2.Collection(""), id)
		for u, uid := range r.UnitIDs(id) {
			got, err := m2.db.Vector("default", uid)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := e.Embed(bg, []string{unitEmbedText(r, r.UnitIndex(u))})
			if fmt.Sprint(got) != fmt.Sprint(want[0]) {
				t.Fatalf("vector of %q is not the embedding of its chunk", uid)
			}
		}
	}
}

// TestDeleteCollectionWhileSearching: searches running while their collection is deleted
// either finish or fail with ErrCollectionNotFound.
func TestDeleteCollectionWhileSearching(t *testing.T) {
	m := openT(t, "")
	for round := 0; round < 5; round++ {
		c := m.Collection("c")
		if err := c.Add(bg, Document{ID: "1", Text: prose(int64(round), 5000)}); err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 8)
		for g := 0; g < 4; g++ {
			go func() {
				for i := 0; i < 20; i++ {
					if _, err := c.Search(bg, "lantern orchard river", WithMode(BM25)); err != nil && !errors.Is(err, ErrCollectionNotFound) {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		if err := m.DeleteCollection(bg, "c"); err != nil {
			t.Fatal(err)
		}
		for g := 0; g < 4; g++ {
			if err := <-errs; err != nil {
				t.Fatalf("search during delete: %v", err)
			}
		}
	}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestChangeLogReplayReplacesChunks: indexes that lag behind the store of record (as after a
// crash) are caught up from the change log, chunk by chunk: chunks of replaced or deleted
// documents go, new ones come.
func TestChangeLogReplayReplacesChunks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	e := vectorstore.NewHashEmbedder(32)
	m1 := openT(t, dir, WithEmbedder(e))
	if err := m1.Add(bg,
		Document{ID: "A", Text: prose(20, 9000) + " The quokkaword lives in version one. " + prose(21, 3000)},
		Document{ID: "B", Text: prose(22, 6000) + " The wombatword goes away."},
		Document{ID: "C", Text: "short C"},
	); err != nil {
		t.Fatal(err)
	}
	m1.Close()
	saved := filepath.Join(t.TempDir(), "saved")
	for _, d := range []string{bm25Dir, vecDir} {
		if _, err := os.Stat(filepath.Join(dir, d)); err == nil {
			copyTree(t, filepath.Join(dir, d), filepath.Join(saved, d))
		}
	}

	m2, err := Open(dir, WithEmbedder(e))
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.Upsert(bg, Document{ID: "A", Text: prose(23, 5000)}, Document{ID: "C", Text: prose(24, 7000) + " The numbatword is new."}); err != nil {
		t.Fatal(err)
	}
	if err := m2.Delete(bg, "B"); err != nil {
		t.Fatal(err)
	}
	if err := m2.Add(bg, Document{ID: "D", Text: prose(25, 4000)}); err != nil {
		t.Fatal(err)
	}
	// "Crash": release the store without trimming the change log, and put the indexes back
	// as they were before these writes.
	m2.closed.Store(true)
	for _, s := range m2.reg.cols {
		s.close()
	}
	m2.db.Close()
	for _, d := range []string{bm25Dir, vecDir} {
		os.RemoveAll(filepath.Join(dir, d))
		if _, err := os.Stat(filepath.Join(saved, d)); err == nil {
			copyTree(t, filepath.Join(saved, d), filepath.Join(dir, d))
		}
	}

	// The restored BM25 index reflects the first session: opening replays the log (it is
	// not rebuilt).
	idx, err := bm25.Open(filepath.Join(dir, bm25Dir, DefaultCollection))
	if err != nil {
		t.Fatal(err)
	}
	if seq := idx.Seq(); seq == 0 || seq >= m2.reg.cols[DefaultCollection].LastSeq {
		t.Fatalf("restored index at seq %d, store at %d: this would not test the replay", seq, m2.reg.cols[DefaultCollection].LastSeq)
	}
	idx.Close()

	m3 := openT(t, dir, WithEmbedder(e))
	docs, units, bm25, vec := colIndexCounts(t, m3.Collection(""))
	if docs != 3 || bm25 != units || vec != units {
		t.Fatalf("docs %d units %d bm25 %d vectors %d", docs, units, bm25, vec)
	}
	for _, tc := range []struct {
		query string
		want  string // "" = nothing may match
	}{
		{"quokkaword", ""},
		{"wombatword", ""},
		{"short", ""},
		{"numbatword", "C"},
	} {
		res, err := m3.Search(bg, tc.query, WithMode(BM25), WithAllChunks())
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, r := range res {
			got += r.ID
		}
		if got != tc.want {
			t.Fatalf("%q found in %q, want %q", tc.query, got, tc.want)
		}
	}
}

// TestUnchunkedDocumentsStayReadable: a long document stored whole (as every document of a
// store written before chunking) is its own single chunk; upserting it chunks it and drops
// the whole-document entry from the indexes.
func TestUnchunkedDocumentsStayReadable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	e := vectorstore.NewHashEmbedder(32)
	text := prose(30, 6000) + " The tapirword sits at the end."
	old := openT(t, dir, WithEmbedder(e), WithChunking(ChunkOptions{Disabled: true}))
	if err := old.Add(bg, Document{ID: "legacy", Text: text}); err != nil {
		t.Fatal(err)
	}
	old.Close()
	m := openT(t, dir, WithEmbedder(e))
	res, err := m.Search(bg, "tapirword", WithMode(BM25))
	if err != nil || len(res) != 1 {
		t.Fatalf("search: %v %v", ids(res), err)
	}
	if r := res[0]; r.Text != text || r.Start != 0 || r.End != len(text) || r.Chunks != 1 || r.ChunkIndex != 0 || r.ID != "legacy" {
		t.Fatalf("whole-document result: chunk %d/%d [%d,%d)", r.ChunkIndex, r.Chunks, r.Start, r.End)
	}
	if d, _ := m.Get(bg, "legacy"); len(d.Embedding) != 32 {
		t.Fatalf("the whole document's vector: %d dims", len(d.Embedding))
	}
	if err := m.Upsert(bg, Document{ID: "legacy", Text: text}); err != nil {
		t.Fatal(err)
	}
	res, _ = m.Search(bg, "tapirword", WithMode(BM25), WithAllChunks())
	if len(res) != 1 || res[0].Chunks < 2 || res[0].Start == 0 {
		t.Fatalf("after upsert: %+v", res)
	}
	if d, _ := m.Get(bg, "legacy"); d.Embedding != nil || d.Text != text {
		t.Fatal("a chunked document has no single vector, and Get returns all its text")
	}
	if docs, units, bm25, vec := colIndexCounts(t, m.Collection("")); docs != 1 || bm25 != units || vec != units {
		t.Fatalf("docs %d units %d bm25 %d vectors %d", docs, units, bm25, vec)
	}
}

// BenchmarkAddLongDocument: Upsert of a 500 KB prose document (chunked, BM25 only).
func BenchmarkAddLongDocument(b *testing.B) {
	m, err := Open("", WithNoSync())
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	text := prose(41, 500<<10)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if err := m.Upsert(bg, Document{ID: "big", Text: text}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearchChunked: a BM25 search (best chunk per document, with and without
// snippets) over 200 documents of 20 KB (about 4,000 chunks).
func BenchmarkSearchChunked(b *testing.B) {
	m, err := Open("", WithNoSync())
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for i := 0; i < 200; i++ {
		if err := m.Add(bg, Document{ID: fmt.Sprint(i), Text: prose(int64(1000+i), 20<<10)}); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range []int{10, 100} {
		for _, snip := range []bool{false, true} {
			opts := []SearchOption{WithMode(BM25), TopK(k)}
			if snip {
				opts = append(opts, WithSnippets())
			}
			b.Run(fmt.Sprintf("k=%d/snippets=%v", k, snip), func(b *testing.B) {
				for b.Loop() {
					if res, err := m.Search(bg, "lantern orchard harbor", opts...); err != nil || len(res) != k {
						b.Fatal(len(res), err)
					}
				}
			})
		}
	}
}

// TestRecreateDeletedCollection: a collection deleted and written again holds only the new
// documents, in a temporary store and in a directory.
func TestRecreateDeletedCollection(t *testing.T) {
	for _, dir := range []string{"", filepath.Join(t.TempDir(), "s")} {
		m := openT(t, dir, WithEmbedder(vectorstore.NewHashEmbedder(16)))
		c := m.Collection("c")
		if err := c.Add(bg, Document{ID: "old", Text: "elephant memory " + prose(60, 4000)}); err != nil {
			t.Fatal(err)
		}
		if err := m.DeleteCollection(bg, "c"); err != nil {
			t.Fatal(err)
		}
		if err := c.Add(bg, Document{ID: "new", Text: "giraffe neck"}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			mode Mode
			want string
		}{{BM25, "[]"}, {Dense, "[new]"}} {
			res, err := c.Search(bg, "elephant memory", WithMode(tc.mode), WithAllChunks(), TopK(100))
			if err != nil || fmt.Sprint(ids(res)) != tc.want {
				t.Fatalf("store %q, %s: %v %v, want %s", dir, tc.mode, ids(res), err, tc.want)
			}
		}
		if docs, units, bm25, vec := colIndexCounts(t, c); docs != 1 || units != 1 || bm25 != 1 || vec != 1 {
			t.Fatalf("store %q: docs %d units %d bm25 %d vectors %d", dir, docs, units, bm25, vec)
		}
	}
}
