package memory

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/sop"
)

// langDocs are a German, a French and a Japanese document per collection of
// TestCollectionAnalyzers, each found by a form the English analyzer does not match.
var langDocs = map[string][]Document{
	"de": {{ID: "de1", Text: "Die Häuser in der Altstadt sind groß."}, {ID: "de2", Text: "Wir fuhren mit den Zügen nach Berlin."}},
	"fr": {{ID: "fr1", Text: "Les chevaux mangent des pommes dans le pré."}, {ID: "fr2", Text: "L'avion était en retard."}},
	"ja": {{ID: "ja1", Text: "コンピュータサイエンスを勉強します。"}, {ID: "ja2", Text: "東京大学の図書館は大きい。"}},
}

func colIDs(res []Result) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.Collection + "/" + r.ID
	}
	return out
}

// TestCollectionAnalyzers: each collection's analyzer is recorded in the manifest (the
// store's default from WithAnalyzer, the others under their names), survives a reopen,
// and is what its BM25 search, a search over several collections and its snippets use.
func TestCollectionAnalyzers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := Open(dir, WithAnalyzer("de"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateCollection("fr", WithCollectionAnalyzer("FR")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateCollection("ja", WithCollectionAnalyzer("cjk")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateCollection("english", WithCollectionAnalyzer("en")); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(ctx, langDocs["de"]...); err != nil { // the default collection: "de"
		t.Fatal(err)
	}
	for _, col := range []string{"fr", "ja"} {
		if err := m.Collection(col).Add(ctx, langDocs[col]...); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Collection("english").Add(ctx, langDocs["de"]...); err != nil {
		t.Fatal(err)
	}
	if err := m.Collection("implicit").Add(ctx, langDocs["de"][0]); err != nil { // the store's default
		t.Fatal(err)
	}
	m.Close()

	man, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"fr": "fr", "ja": "cjk", "english": "en"}
	if man.Analyzer != "de" || !maps.Equal(man.Analyzers, want) {
		t.Fatalf("manifest: analyzer %q, analyzers %v; want de, %v", man.Analyzer, man.Analyzers, want)
	}

	for _, ro := range []bool{false, true} {
		var opts []Option
		if ro {
			opts = append(opts, ReadOnly())
		}
		m, err = Open(dir, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for col, ana := range map[string]string{"default": "de", "fr": "fr", "ja": "cjk", "english": "en", "implicit": "de", "new": "de"} {
			if got := m.Collection(col).Analyzer(); got != ana {
				t.Fatalf("read only %v: %s analyzer %q, want %q", ro, col, got, ana)
			}
		}
		for _, c := range []struct {
			col, query string
			want       []string
		}{
			{"default", "Haus", []string{"default/de1"}},
			{"default", "Zug", []string{"default/de2"}},
			{"implicit", "Haus", []string{"implicit/de1"}},
			{"english", "Haus", nil}, // English keeps "häuser"
			{"fr", "cheval", []string{"fr/fr1"}},
			{"fr", "avion", []string{"fr/fr2"}},
			{"ja", "サイエンス", []string{"ja/ja1"}},
		} {
			res, err := m.Collection(c.col).Search(ctx, c.query, WithMode(BM25))
			if err != nil {
				t.Fatal(err)
			}
			if got := colIDs(res); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
				t.Errorf("read only %v: %s %q: %v, want %v", ro, c.col, c.query, got, c.want)
			}
		}
		// One query over collections of three analyzers: each analyses it its own way.
		res, err := m.Search(ctx, "Haus cheval サイエンス", WithMode(BM25),
			InCollections(map[string]float64{"default": 1, "fr": 1, "ja": 1, "english": 1}))
		if err != nil {
			t.Fatal(err)
		}
		got := colIDs(res)
		slices.Sort(got)
		if w := []string{"default/de1", "fr/fr1", "ja/ja1"}; !slices.Equal(got, w) {
			t.Errorf("read only %v: across collections: %v, want %v", ro, got, w)
		}
		m.Close()
	}
}

// TestAnalyzerSnippets: a snippet shows the words the collection's analyzer matched.
func TestAnalyzerSnippets(t *testing.T) {
	ctx := context.Background()
	m, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pad := strings.Repeat("Le pré est vert et le ciel est bleu. ", 12)
	if _, err := m.CreateCollection("fr", WithCollectionAnalyzer("fr")); err != nil {
		t.Fatal(err)
	}
	if err := m.Collection("fr").Add(ctx, Document{ID: "1", Text: pad + "Les chevaux mangent des pommes."}); err != nil {
		t.Fatal(err)
	}
	res, err := m.Collection("fr").Search(ctx, "cheval", WithMode(BM25), WithSnippets())
	if err != nil || len(res) != 1 {
		t.Fatalf("%v, %v", res, err)
	}
	if !strings.Contains(res[0].Snippet, "chevaux") {
		t.Fatalf("snippet %q does not show the matched word", res[0].Snippet)
	}
	if _, err := m.CreateCollection("ja", WithCollectionAnalyzer("cjk")); err != nil {
		t.Fatal(err)
	}
	if err := m.Collection("ja").Add(ctx, Document{ID: "1", Text: strings.Repeat("東京の天気は晴れです。", 20) + "コンピュータサイエンスを勉強します。"}); err != nil {
		t.Fatal(err)
	}
	res, err = m.Collection("ja").Search(ctx, "サイエンス", WithMode(BM25), WithSnippets())
	if err != nil || len(res) != 1 {
		t.Fatalf("%v, %v", res, err)
	}
	if !strings.Contains(res[0].Snippet, "サイエンス") {
		t.Fatalf("snippet %q does not show the matched word", res[0].Snippet)
	}
}

// TestAnalyzerErrors: unknown analyzers and analyzers other than the recorded one are
// typed errors, and change nothing.
func TestAnalyzerErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Open(dir, WithAnalyzer("klingon")); !errors.Is(err, ErrUnknownAnalyzer) || !errors.Is(err, ErrInvalidOption) ||
		!strings.Contains(err.Error(), `"klingon"`) || !strings.Contains(err.Error(), "cjk") {
		t.Fatalf("unknown store analyzer: %v", err)
	}
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(ctx, Document{ID: "1", Text: "houses"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateCollection("x", WithCollectionAnalyzer("nope")); !errors.Is(err, ErrUnknownAnalyzer) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown collection analyzer: %v", err)
	}
	if slices.Contains(memtest.Collections(t, m), "x") {
		t.Fatal("a collection with an unknown analyzer was created")
	}
	if _, err := m.CreateCollection("fr", WithCollectionAnalyzer("fr")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateCollection("fr", WithCollectionAnalyzer("de")); !errors.Is(err, ErrAnalyzerMismatch) {
		t.Fatalf("collection created again with another analyzer: %v", err)
	}
	if _, err := m.CreateCollection("fr"); err != nil { // no analyzer named: the recorded one
		t.Fatal(err)
	}
	if _, err := m.CreateCollection("fr", WithCollectionAnalyzer("fr")); err != nil {
		t.Fatal(err)
	}
	if err := m.SetCollectionAnalyzer(ctx, "fr", "nope"); !errors.Is(err, ErrUnknownAnalyzer) {
		t.Fatalf("SetCollectionAnalyzer unknown: %v", err)
	}
	if err := m.SetCollectionAnalyzer(ctx, "missing", "de"); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("SetCollectionAnalyzer on a missing collection: %v", err)
	}
	m.Close()
	before, _ := os.ReadFile(filepath.Join(dir, manifestName))
	// The store holds documents analysed as English: opening it as another is an error.
	for _, ro := range []bool{false, true} {
		opts := []Option{WithAnalyzer("cjk")}
		if ro {
			opts = append(opts, ReadOnly())
		}
		if _, err := Open(dir, opts...); !errors.Is(err, ErrAnalyzerMismatch) || !strings.Contains(err.Error(), `"en"`) {
			t.Fatalf("read only %v: opened with another analyzer: %v", ro, err)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, manifestName)); string(after) != string(before) {
		t.Fatalf("a failed open changed the manifest:\n%s\n%s", before, after)
	}
	m, err = Open(dir, WithAnalyzer("EN")) // the recorded one
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
}

// TestEnglishManifestUnchanged: a store that never names an analyzer writes no analyzer
// field (its manifest is that of earlier versions), and a manifest without one reads as
// English.
func TestEnglishManifestUnchanged(t *testing.T) {
	dir := t.TempDir()
	m, err := Open(dir, WithAnalyzer("en"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateCollection("c", WithCollectionAnalyzer("en")); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(context.Background(), Document{ID: "1", Text: "houses"}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "analyzer") {
		t.Fatalf("manifest of an English store names an analyzer:\n%s", b)
	}
	m, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if a := m.Collection("c").Analyzer(); a != "en" {
		t.Fatalf("analyzer %q", a)
	}
	if res, err := m.Search(context.Background(), "house", WithMode(BM25)); err != nil || len(res) != 1 {
		t.Fatalf("%v, %v", res, err)
	}
}

// TestSetCollectionAnalyzer: changing a collection's analyzer rebuilds its BM25 index, and
// the change is recorded.
func TestSetCollectionAnalyzer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Collection("c")
	if err := c.Add(ctx, langDocs["de"]...); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Search(ctx, "Haus", WithMode(BM25)); err != nil || len(res) != 0 {
		t.Fatalf("English: %v, %v", res, err)
	}
	if err := m.SetCollectionAnalyzer(ctx, "c", "de"); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Search(ctx, "Haus", WithMode(BM25)); err != nil || len(res) != 1 || res[0].ID != "de1" {
		t.Fatalf("German: %v, %v", res, err)
	}
	m.Close()
	m, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if a := m.Collection("c").Analyzer(); a != "de" {
		t.Fatalf("reopened: analyzer %q", a)
	}
	if res, err := m.Collection("c").Search(ctx, "Zug", WithMode(BM25)); err != nil || len(res) != 1 || res[0].ID != "de2" {
		t.Fatalf("reopened: %v, %v", res, err)
	}
}

// TestAnalyzerSOPs: a store's SOP triggers are matched with its analyzer: German and
// French inflections, and a Japanese trigger inside a katakana compound, which the English
// store (Bleve's English analyzer too) misses.
func TestAnalyzerSOPs(t *testing.T) {
	for _, c := range []struct {
		analyzer, trigger, query string
	}{
		{"de", "Haus bauen", "Wir wollen Häuser bauen lassen"},
		{"fr", "cheval", "Mes chevaux sont malades"},
		// katakana compounds: one word to a Unicode word segmenter (English), bigrams to cjk
		{"cjk", "サイエンス", "コンピュータサイエンスを勉強します"},
		{"cjk", "バックアップ", "データベースバックアップの方法"},
	} {
		m, err := Open("", WithAnalyzer(c.analyzer))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.SOPs().Add(sop.Procedure{Name: "p", Trigger: sop.Triggers{c.trigger}, Steps: []sop.Step{{Action: "do it"}}}); err != nil {
			t.Fatal(err)
		}
		if got := m.SOPs().Match(c.query, 3, sop.MatchOptions{}); len(got) != 1 {
			t.Errorf("%s: trigger %q, query %q: %+v", c.analyzer, c.trigger, c.query, got)
		}
		if got := m.SOPs().Match("Katze 猫 chat", 3, sop.MatchOptions{}); len(got) != 0 {
			t.Errorf("%s: unrelated query matched: %+v", c.analyzer, got)
		}
		m.Close()
		// The English store's library misses them: its stemmer and words differ.
		m, err = Open("")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.SOPs().Add(sop.Procedure{Name: "p", Trigger: sop.Triggers{c.trigger}, Steps: []sop.Step{{Action: "do it"}}}); err != nil {
			t.Fatal(err)
		}
		if got := m.SOPs().Match(c.query, 3, sop.MatchOptions{}); len(got) != 0 {
			t.Errorf("en: trigger %q, query %q matched: the case does not tell the analyzers apart", c.trigger, c.query)
		}
		m.Close()
	}
}

// TestAnalyzerConcurrentCreate: collections created with their analyzers while searches
// and writes run elsewhere (go test -race).
func TestAnalyzerConcurrentCreate(t *testing.T) {
	ctx := context.Background()
	m, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Add(ctx, langDocs["de"]...); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() {
		for range 50 {
			if _, err := m.Search(ctx, "Häuser", WithMode(BM25), WithSnippets()); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	go func() {
		for i, ana := range []string{"de", "fr", "cjk", "en", "de", "fr"} {
			name := "c" + string(rune('a'+i))
			if _, err := m.CreateCollection(name, WithCollectionAnalyzer(ana)); err != nil {
				done <- err
				return
			}
			if err := m.Collection(name).Add(ctx, langDocs["fr"]...); err != nil {
				done <- err
				return
			}
			if a := m.Collection(name).Analyzer(); a != ana {
				done <- errors.New(name + ": analyzer " + a)
				return
			}
		}
		done <- nil
	}()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestRenameKeepsAnalyzer: a renamed collection keeps the analyzer the manifest recorded
// for it (the entry moves to the new name), so its BM25 index is not rebuilt with the
// store's default and French inflections still match; the old name's entry is gone.
func TestRenameKeepsAnalyzer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateCollection("fr", WithCollectionAnalyzer("fr"), WithCollectionMetadata(map[string]any{"lang": "fr"})); err != nil {
		t.Fatal(err)
	}
	if err := m.Collection("fr").Add(ctx, langDocs["fr"]...); err != nil {
		t.Fatal(err)
	}
	if err := m.RenameCollection(ctx, "fr", "francais"); err != nil {
		t.Fatal(err)
	}
	check := func(m *Memory, when string) {
		t.Helper()
		c := m.Collection("francais")
		if got := c.Analyzer(); got != "fr" {
			t.Fatalf("%s: analyzer %q, want fr", when, got)
		}
		res, err := c.Search(ctx, "cheval", WithMode(BM25))
		if err != nil || len(res) == 0 || res[0].ID != "fr1" {
			t.Fatalf("%s: cheval found %v, %v; want fr1 (French stemming)", when, res, err)
		}
		md, err := c.Metadata(ctx)
		if err != nil || md["lang"] != "fr" {
			t.Fatalf("%s: metadata %v, %v", when, md, err)
		}
	}
	check(m, "after rename")
	m.Close()
	man, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"francais": "fr"}; !maps.Equal(man.Analyzers, want) {
		t.Fatalf("manifest analyzers %v, want %v", man.Analyzers, want)
	}
	m, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	check(m, "after reopen")
}
