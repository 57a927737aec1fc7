package wordpiece

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// modelsDir locates the shared model fixtures: $MEMORY_MODELS, else <repo root>/../shared/models.
// A missing directory skips the test unless MEMORY_REQUIRE_FIXTURES=1.
func modelsDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("MEMORY_MODELS")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "..", "shared", "models")
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "golden")); err == nil {
			return dir
		}
	}
	if os.Getenv("MEMORY_REQUIRE_FIXTURES") == "1" {
		t.Fatalf("model fixtures not found (MEMORY_MODELS=%q)", os.Getenv("MEMORY_MODELS"))
	}
	t.Skip("model fixtures not found; set MEMORY_MODELS")
	return ""
}

var tokCache sync.Map // dir -> *Tokenizer

func loadDir(t testing.TB, name string) *Tokenizer {
	t.Helper()
	dir := filepath.Join(modelsDir(t), name)
	if v, ok := tokCache.Load(dir); ok {
		return v.(*Tokenizer)
	}
	tok, err := LoadDir(dir)
	if err != nil {
		t.Fatalf("LoadDir(%s): %v", dir, err)
	}
	tokCache.Store(dir, tok)
	return tok
}

func readGolden(t testing.TB, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(modelsDir(t), "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

type singleGolden struct {
	MaxSeqLength int `json:"max_seq_length"`
	Cases        []struct {
		ID       string   `json:"id"`
		Text     string   `json:"text"`
		InputIDs []int64  `json:"input_ids"`
		Tokens   []string `json:"tokens"`
	} `json:"cases"`
}

type pairGolden struct {
	MaxLength int `json:"max_length"`
	Cases     []struct {
		ID           string   `json:"id"`
		Query        string   `json:"query"`
		Passage      string   `json:"passage"`
		NQuery       int      `json:"n_wordpieces_query"`
		NPassage     int      `json:"n_wordpieces_passage"`
		InputIDs     []int64  `json:"input_ids"`
		TokenTypeIDs []int64  `json:"token_type_ids"`
		Tokens       []string `json:"tokens"`
	} `json:"cases"`
}

type potionGolden struct {
	Cases []struct {
		ID            string   `json:"id"`
		Text          string   `json:"text"`
		IDs           []int64  `json:"ids"`
		Tokens        []string `json:"tokens"`
		IDsWithoutUnk []int64  `json:"ids_without_unk"`
	} `json:"cases"`
}

func TestGoldenMiniLM(t *testing.T) {
	var g singleGolden
	readGolden(t, "minilm_tokens.json", &g)
	for _, name := range []string{"all-MiniLM-L6-v2", "tiny-bert-encoder"} {
		tok := loadDir(t, name)
		if tok.MaxLength() != g.MaxSeqLength || g.MaxSeqLength != 256 {
			t.Fatalf("%s: MaxLength = %d, golden %d, want 256", name, tok.MaxLength(), g.MaxSeqLength)
		}
		if len(g.Cases) != 14 {
			t.Fatalf("golden has %d cases, want 14", len(g.Cases))
		}
		for _, c := range g.Cases {
			t.Run(name+"/"+c.ID, func(t *testing.T) {
				e := tok.Encode(c.Text)
				if !slices.Equal(e.IDs, c.InputIDs) {
					t.Fatalf("ids\n got %v\nwant %v\ntokens got %q\n      want %q", e.IDs, c.InputIDs, e.Tokens, c.Tokens)
				}
				if !slices.Equal(e.Tokens, c.Tokens) {
					t.Errorf("tokens\n got %q\nwant %q", e.Tokens, c.Tokens)
				}
				for i := range e.IDs {
					if e.TypeIDs[i] != 0 || e.Mask[i] != 1 {
						t.Fatalf("position %d: type %d mask %d, want 0 and 1", i, e.TypeIDs[i], e.Mask[i])
					}
				}
			})
		}
	}
}

func TestGoldenMiniLMVocabTxt(t *testing.T) {
	// The same tokenizer loaded from a plain vocab.txt must give the same ids.
	var g singleGolden
	readGolden(t, "minilm_tokens.json", &g)
	tok, err := Load(filepath.Join(modelsDir(t), "all-MiniLM-L6-v2", "vocab.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tok.SetMaxLength(g.MaxSeqLength)
	for _, c := range g.Cases {
		if got := tok.Encode(c.Text).IDs; !slices.Equal(got, c.InputIDs) {
			t.Errorf("%s: got %v\nwant %v", c.ID, got, c.InputIDs)
		}
	}
}

func TestGoldenCrossEncoder(t *testing.T) {
	var g pairGolden
	readGolden(t, "ce_tokens.json", &g)
	if len(g.Cases) != 15 || g.MaxLength != 512 {
		t.Fatalf("golden: %d cases, max %d; want 15 and 512", len(g.Cases), g.MaxLength)
	}
	for _, name := range []string{"ms-marco-MiniLM-L-6-v2", "tiny-bert-cross-encoder"} {
		tok := loadDir(t, name)
		if tok.MaxLength() != 512 {
			t.Fatalf("%s: MaxLength = %d, want 512", name, tok.MaxLength())
		}
		for _, c := range g.Cases {
			t.Run(name+"/"+c.ID, func(t *testing.T) {
				if n := len(tok.Pieces(c.Query)); n != c.NQuery {
					t.Errorf("query pieces %d, want %d", n, c.NQuery)
				}
				if n := len(tok.Pieces(c.Passage)); n != c.NPassage {
					t.Errorf("passage pieces %d, want %d", n, c.NPassage)
				}
				e := tok.EncodePair(c.Query, c.Passage)
				if !slices.Equal(e.IDs, c.InputIDs) {
					t.Fatalf("ids\n got %v\nwant %v", e.IDs, c.InputIDs)
				}
				if !slices.Equal(e.TypeIDs, c.TokenTypeIDs) {
					t.Fatalf("type ids\n got %v\nwant %v", e.TypeIDs, c.TokenTypeIDs)
				}
				if !slices.Equal(e.Tokens, c.Tokens) {
					t.Errorf("tokens\n got %q\nwant %q", e.Tokens, c.Tokens)
				}
			})
		}
	}
}

func TestGoldenPotion(t *testing.T) {
	var g potionGolden
	readGolden(t, "potion_tokens.json", &g)
	tok := loadDir(t, "potion-base-2M")
	if tok.VocabSize() != 29528 {
		t.Fatalf("VocabSize = %d, want 29528", tok.VocabSize())
	}
	if tok.UnkID() != 1 || tok.PadID() != 0 || tok.ClsID() != 2 || tok.SepID() != 3 {
		t.Fatalf("special ids unk %d pad %d cls %d sep %d", tok.UnkID(), tok.PadID(), tok.ClsID(), tok.SepID())
	}
	if len(g.Cases) != 14 {
		t.Fatalf("golden has %d cases, want 14", len(g.Cases))
	}
	for _, c := range g.Cases {
		t.Run(c.ID, func(t *testing.T) {
			got := tok.Pieces(c.Text)
			if len(got) == 0 && len(c.IDs) == 0 {
				return
			}
			if !slices.Equal(got, c.IDs) {
				t.Fatalf("ids\n got %v\nwant %v\ntokens got %q\n      want %q", got, c.IDs, tok.Tokenize(c.Text), c.Tokens)
			}
			if toks := tok.Tokenize(c.Text); !slices.Equal(toks, c.Tokens) {
				t.Errorf("tokens\n got %q\nwant %q", toks, c.Tokens)
			}
		})
	}
}

func TestTruncatePair(t *testing.T) {
	tests := []struct {
		n1, n2, budget int
		k1, k2         int
	}{
		{7, 24, 509, 7, 24},   // fits
		{9, 894, 509, 9, 500}, // passage only
		{298, 607, 509, 254, 255},
		{607, 298, 509, 255, 254}, // the originally longer segment gets the larger half
		{596, 596, 509, 254, 255}, // tie: the second segment gets it
		{600, 10, 509, 499, 10},
		{0, 1000, 509, 0, 509},
		{5, 5, 0, 0, 0},
		{3, 4, 5, 2, 3},
		{1, 1, 1, 0, 1},
	}
	for _, tc := range tests {
		k1, k2 := TruncatePair(tc.n1, tc.n2, tc.budget)
		if k1 != tc.k1 || k2 != tc.k2 {
			t.Errorf("TruncatePair(%d, %d, %d) = %d, %d; want %d, %d", tc.n1, tc.n2, tc.budget, k1, k2, tc.k1, tc.k2)
		}
	}
}

func TestMaxLengthAndTruncation(t *testing.T) {
	c, err := LoadDir(filepath.Join(modelsDir(t), "ms-marco-MiniLM-L-6-v2")) // own max length
	if err != nil {
		t.Fatal(err)
	}
	c.SetMaxLength(6)
	e := c.Encode("one two three four five six seven")
	if want := []string{"[CLS]", "one", "two", "three", "four", "[SEP]"}; !slices.Equal(e.Tokens, want) {
		t.Fatalf("Encode tokens %q, want %q", e.Tokens, want)
	}
	e = c.EncodePair("alpha beta gamma", "one two three four")
	if want := []string{"[CLS]", "alpha", "[SEP]", "one", "[SEP]"}; len(e.IDs) != 6 || !slices.Equal(e.Tokens[:3], want[:3]) {
		t.Fatalf("EncodePair tokens %q", e.Tokens)
	}
	if want := []int64{0, 0, 0, 1, 1, 1}; !slices.Equal(e.TypeIDs, want) {
		t.Fatalf("type ids %v, want %v", e.TypeIDs, want)
	}
	for _, tc := range []struct{ set, want int }{{0, 512}, {-4, 512}, {1, 3}, {2, 3}, {3, 3}, {300, 300}} {
		c.SetMaxLength(tc.set)
		if got := c.MaxLength(); got != tc.want {
			t.Errorf("SetMaxLength(%d): MaxLength = %d, want %d", tc.set, got, tc.want)
		}
	}
}

func TestSpecialTokensInText(t *testing.T) {
	tok := loadDir(t, "all-MiniLM-L6-v2")
	e := tok.Encode("hello [SEP] world[MASK]x [sep]")
	want := []string{"[CLS]", "hello", "[SEP]", "world", "[MASK]", "x", "[", "sep", "]", "[SEP]"}
	if !slices.Equal(e.Tokens, want) {
		t.Fatalf("tokens %q, want %q", e.Tokens, want)
	}
}

func TestNormalizer(t *testing.T) {
	tok := loadDir(t, "all-MiniLM-L6-v2")
	tests := []struct{ in, want string }{
		{"Hello World", "hello world"},
		{"a\tb\nc\rd\u00a0e", "a b c d e"},
		{"x\x00y\ufffdz\u200bw\u00adv\x07u", "xyzwvu"},
		{"Crème Brûlée", "creme brulee"},
		{"東京", " 東  京 "},
		{"İ", "i"}, // NFD splits off the dot above, which is stripped before lowercasing
		{"ΣΑΣ", "σασ"},
		{"\u0085next", "next"}, // NEL is Cc: dropped, not mapped to a space
	}
	for _, tc := range tests {
		if got := tok.normalizeText(tc.in); got != tc.want {
			t.Errorf("normalizeText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Lowercase without accent stripping uses the full mapping: İ -> i + U+0307.
	keep := &Tokenizer{normalize: true, cleanText: true, lowercase: true}
	if got := keep.normalizeText("İÉ"); got != "i\u0307é" {
		t.Errorf("lowercase without strip: %q", got)
	}
}

func TestLongWordIsUnknown(t *testing.T) {
	tok := loadDir(t, "all-MiniLM-L6-v2")
	w100 := strings.Repeat("a", 100)
	if p := tok.Pieces(w100); len(p) == 0 || slices.Contains(p, tok.UnkID()) {
		t.Fatalf("100-char word: %v (must not be [UNK])", p)
	}
	if p := tok.Pieces(w100 + "a"); !slices.Equal(p, []int64{tok.UnkID()}) {
		t.Fatalf("101-char word: %v, want [UNK]", p)
	}
}

func TestPadBatch(t *testing.T) {
	tok := loadDir(t, "ms-marco-MiniLM-L-6-v2")
	encs := []Encoding{tok.EncodePair("a b", "c d e"), tok.Encode("x"), tok.Encode("")}
	b := tok.PadBatch(encs)
	if b.Rows != 3 || b.Cols != 8 || len(b.IDs) != 24 || len(b.Mask) != 24 || len(b.TypeIDs) != 24 {
		t.Fatalf("batch %d x %d (len %d)", b.Rows, b.Cols, len(b.IDs))
	}
	for r, e := range encs {
		for c := 0; c < b.Cols; c++ {
			i := r*b.Cols + c
			if c < len(e.IDs) {
				if b.IDs[i] != e.IDs[c] || b.TypeIDs[i] != e.TypeIDs[c] || b.Mask[i] != 1 {
					t.Fatalf("row %d col %d: %d/%d/%d", r, c, b.IDs[i], b.TypeIDs[i], b.Mask[i])
				}
			} else if b.IDs[i] != tok.PadID() || b.TypeIDs[i] != 0 || b.Mask[i] != 0 {
				t.Fatalf("row %d col %d padding: %d/%d/%d", r, c, b.IDs[i], b.TypeIDs[i], b.Mask[i])
			}
		}
	}
	if empty := tok.PadBatch(nil); empty.Rows != 0 || empty.Cols != 0 || len(empty.IDs) != 0 {
		t.Fatalf("empty batch %+v", empty)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, file, content string
		want                error
	}{
		{"bad json", "a.json", "{", ErrBadTokenizer},
		{"no vocab", "b.json", `{"model":{"type":"WordPiece","vocab":{}}}`, ErrBadTokenizer},
		{"bpe", "c.json", `{"model":{"type":"BPE","vocab":{"a":0}}}`, ErrUnsupported},
		{"no unk", "d.json", `{"model":{"type":"WordPiece","vocab":{"[CLS]":0,"[SEP]":1}}}`, ErrBadTokenizer},
		{"negative id", "e.json", `{"model":{"vocab":{"[UNK]":-1,"[CLS]":0,"[SEP]":1}}}`, ErrBadTokenizer},
		{"huge id", "f.json", `{"model":{"vocab":{"[UNK]":99999999999,"[CLS]":0,"[SEP]":1}}}`, ErrBadTokenizer},
		{"normalizer", "g.json", `{"normalizer":{"type":"NFKC"},"model":{"vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2}}}`, ErrUnsupported},
		{"pretokenizer", "h.json", `{"pre_tokenizer":{"type":"ByteLevel"},"model":{"vocab":{"[UNK]":0,"[CLS]":1,"[SEP]":2}}}`, ErrUnsupported},
		{"empty vocab.txt", "vocab.txt", "", ErrBadTokenizer},
		{"vocab.txt without specials", "v2.txt", "a\nb\n", ErrBadTokenizer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(write(tc.file, tc.content))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Load: %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); !errors.Is(err, ErrNotFound) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	empty := t.TempDir()
	if _, err := LoadDir(empty); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty dir: %v", err)
	}
}

func TestLoadDirMaxLength(t *testing.T) {
	vocab := "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n"
	tests := []struct {
		name  string
		files map[string]string
		want  int
	}{
		{"default", nil, 512},
		{"sbert", map[string]string{"sentence_bert_config.json": `{"max_seq_length": 128}`, "tokenizer_config.json": `{"model_max_length": 64}`}, 128},
		{"tokenizer_config", map[string]string{"tokenizer_config.json": `{"model_max_length": 64}`}, 64},
		{"absurd", map[string]string{"tokenizer_config.json": `{"model_max_length": 1000000000000000019884624838656}`}, 512},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"vocab.txt": vocab}
			for k, v := range tc.files {
				files[k] = v
			}
			for k, v := range files {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tok, err := LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tok.MaxLength() != tc.want {
				t.Fatalf("MaxLength = %d, want %d", tok.MaxLength(), tc.want)
			}
			if got := tok.Encode("Hello hello!").Tokens; !slices.Equal(got, []string{"[CLS]", "hello", "hello", "[UNK]", "[SEP]"}) {
				t.Fatalf("tokens %q", got)
			}
		})
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "vocab.txt"), []byte(vocab), 0o644)
	os.WriteFile(filepath.Join(dir, "sentence_bert_config.json"), []byte("{bad"), 0o644)
	if _, err := LoadDir(dir); !errors.Is(err, ErrBadTokenizer) {
		t.Fatalf("corrupt sentence_bert_config.json: %v", err)
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok := loadDir(t, "all-MiniLM-L6-v2")
	want := tok.Encode("Concurrent use is safe, isn't it?").IDs
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := tok.Encode("Concurrent use is safe, isn't it?").IDs; !slices.Equal(got, want) {
					t.Errorf("got %v want %v", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
