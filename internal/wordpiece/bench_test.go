package wordpiece

import (
	"fmt"
	"path/filepath"
	"testing"
)

// benchTexts are the 14 golden MiniLM sentences (mixed scripts, punctuation, a long text).
func benchTexts(b *testing.B) []string {
	var g singleGolden
	readGolden(b, "minilm_tokens.json", &g)
	texts := make([]string, len(g.Cases))
	for i, c := range g.Cases {
		texts[i] = c.Text
	}
	return texts
}

func runTokensPerSecond(b *testing.B, texts []string, f func(string) int) {
	b.Helper()
	bytes := 0
	for _, s := range texts {
		bytes += len(s)
	}
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	b.ResetTimer()
	tokens := 0
	for b.Loop() {
		for _, s := range texts {
			tokens += f(s)
		}
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkEncode measures single-text encoding (max 256) over the golden sentences.
func BenchmarkEncode(b *testing.B) {
	tok := loadDir(b, "all-MiniLM-L6-v2")
	runTokensPerSecond(b, benchTexts(b), func(s string) int { return len(tok.Encode(s).IDs) })
}

// BenchmarkPieces measures untruncated word-piece ids (the Model2Vec path).
func BenchmarkPieces(b *testing.B) {
	tok := loadDir(b, "potion-base-2M")
	runTokensPerSecond(b, benchTexts(b), func(s string) int { return len(tok.Pieces(s)) })
}

// BenchmarkEncodePair measures cross-encoder pair encoding (max 512) over the golden pairs.
func BenchmarkEncodePair(b *testing.B) {
	tok := loadDir(b, "ms-marco-MiniLM-L-6-v2")
	var g pairGolden
	readGolden(b, "ce_tokens.json", &g)
	b.ReportAllocs()
	tokens := 0
	for b.Loop() {
		for _, c := range g.Cases {
			tokens += len(tok.EncodePair(c.Query, c.Passage).IDs)
		}
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkLoad measures loading tokenizer.json (30522 entries).
func BenchmarkLoad(b *testing.B) {
	path := filepath.Join(modelsDir(b), "all-MiniLM-L6-v2", "tokenizer.json")
	for b.Loop() {
		if _, err := Load(path); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEncodePairCrossEncoder encodes a query-passage pair as the ms-marco cross-encoder
// sees it (it was an Example, which cannot skip where the fixtures are absent).
func TestEncodePairCrossEncoder(t *testing.T) {
	tok, err := Load(filepath.Join(modelsDir(t), "ms-marco-MiniLM-L-6-v2", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	e := tok.EncodePair("How many people live in Berlin?", "Berlin is well known for its museums.")
	got := fmt.Sprintln(e.Tokens) + fmt.Sprintln(e.IDs[:4], e.TypeIDs)
	want := "[[CLS] how many people live in berlin ? [SEP] berlin is well known for its museums . [SEP]]\n" +
		"[101 2129 2116 2111] [0 0 0 0 0 0 0 0 0 1 1 1 1 1 1 1 1 1]\n"
	if got != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
}
