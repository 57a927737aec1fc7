//go:build cgo

package rerank

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory/internal/onnx"
	"github.com/agentmem/memory/internal/onnx/onnxgraph"
	"github.com/agentmem/memory/internal/onnx/onnxtest"
	"github.com/agentmem/memory/internal/wordpiece"
	"github.com/agentmem/memory/models"
)

const goldenTol = 1e-4

type ceGolden struct {
	ModelSHA256 string `json:"model_sha256"`
	Cases       []struct {
		ID           string  `json:"id"`
		Query        string  `json:"query"`
		Passage      string  `json:"passage"`
		InputIDs     []int64 `json:"input_ids"`
		TokenTypeIDs []int64 `json:"token_type_ids"`
		Logit        float64 `json:"logit"`
	} `json:"cases"`
	PaddedBatch struct {
		IDs      []string  `json:"ids"`
		PaddedTo int       `json:"padded_to"`
		Logits   []float64 `json:"logits"`
	} `json:"padded_batch"`
}

func loadCEGolden(t testing.TB) (ceGolden, string) {
	t.Helper()
	var g ceGolden
	models := onnxtest.Golden(t, "tiny-bert_cross_encoder_logits.json", &g, 15, func() int { return len(g.Cases) })
	return g, filepath.Join(models, "tiny-bert-cross-encoder")
}

func newTinyCE(t testing.TB, opts CrossEncoderOptions) *CrossEncoder {
	t.Helper()
	_, dir := loadCEGolden(t)
	opts.LibraryPath, opts.Threads = onnxtest.Library(t), max(opts.Threads, 1)
	return onnxtest.Open(t, func() (*CrossEncoder, error) { return NewCrossEncoder(context.Background(), dir, opts) })
}

func pairEncoding(ids, types []int64) wordpiece.Encoding {
	mask := make([]int64, len(ids))
	for i := range mask {
		mask[i] = 1
	}
	return wordpiece.Encoding{IDs: ids, TypeIDs: types, Mask: mask}
}

func checkLogits(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	onnxtest.Close(t, what, got, want, goldenTol)
}

func TestCrossEncoderMetadata(t *testing.T) {
	g, _ := loadCEGolden(t)
	ce := newTinyCE(t, CrossEncoderOptions{})
	if want := "tiny-bert-cross-encoder@sha256:" + g.ModelSHA256[:16]; ce.ID() != want {
		t.Errorf("ID = %q, want %q", ce.ID(), want)
	}
	if ce.MaxLength() != 512 || ce.Device() != "cpu" {
		t.Errorf("MaxLength %d Device %q", ce.MaxLength(), ce.Device())
	}
}

// TestCrossEncoderGoldenIDs feeds the golden ids singly and in padded batches.
func TestCrossEncoderGoldenIDs(t *testing.T) {
	g, _ := loadCEGolden(t)
	ctx := context.Background()
	encs := make([]wordpiece.Encoding, len(g.Cases))
	want := make([]float64, len(g.Cases))
	for i, c := range g.Cases {
		encs[i] = pairEncoding(c.InputIDs, c.TokenTypeIDs)
		want[i] = c.Logit
	}
	for _, bs := range []int{1, 4, 32} {
		t.Run(fmt.Sprintf("batch%d", bs), func(t *testing.T) {
			ce := newTinyCE(t, CrossEncoderOptions{BatchSize: bs})
			got, err := ce.scoreEncodings(ctx, encs)
			if err != nil {
				t.Fatal(err)
			}
			checkLogits(t, "logits", got, want)
		})
	}
	t.Run("padded_batch", func(t *testing.T) {
		ce := newTinyCE(t, CrossEncoderOptions{})
		byID := map[string]int{}
		for i, c := range g.Cases {
			byID[c.ID] = i
		}
		var batch []wordpiece.Encoding
		for _, id := range g.PaddedBatch.IDs {
			batch = append(batch, encs[byID[id]])
		}
		if b := ce.enc.Tok.PadBatch(batch); b.Cols != g.PaddedBatch.PaddedTo {
			t.Fatalf("padded to %d, golden %d", b.Cols, g.PaddedBatch.PaddedTo)
		}
		got, err := ce.scoreEncodings(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		checkLogits(t, "padded batch", got, g.PaddedBatch.Logits)
	})
}

// TestCrossEncoderGoldenText goes end to end through the tokenizer (with longest-first
// truncation of the three 512-token cases), one pair per call and all pairs batched.
func TestCrossEncoderGoldenText(t *testing.T) {
	g, _ := loadCEGolden(t)
	ctx := context.Background()
	ce := newTinyCE(t, CrossEncoderOptions{BatchSize: 5})
	for _, c := range g.Cases {
		enc := ce.enc.Tok.EncodePair(c.Query, c.Passage)
		if !slices.Equal(enc.IDs, c.InputIDs) || !slices.Equal(enc.TypeIDs, c.TokenTypeIDs) {
			t.Fatalf("%s: tokenizer differs from golden (len %d vs %d)", c.ID, len(enc.IDs), len(c.InputIDs))
		}
		got, err := ce.Score(ctx, c.Query, []string{c.Passage})
		if err != nil {
			t.Fatal(err)
		}
		checkLogits(t, c.ID, got, []float64{c.Logit})
	}
	// Batched: group by query (Score takes one query) and score all its passages at once.
	byQuery := map[string][]int{}
	for i, c := range g.Cases {
		byQuery[c.Query] = append(byQuery[c.Query], i)
	}
	for q, idx := range byQuery {
		var ps []string
		var want []float64
		for _, i := range idx {
			ps = append(ps, g.Cases[i].Passage)
			want = append(want, g.Cases[i].Logit)
		}
		got, err := ce.Score(ctx, q, ps)
		if err != nil {
			t.Fatal(err)
		}
		checkLogits(t, "query "+q[:min(len(q), 20)], got, want)
	}
}

func TestCrossEncoderRerank(t *testing.T) {
	g, _ := loadCEGolden(t)
	ce := newTinyCE(t, CrossEncoderOptions{BatchSize: 2})
	ctx := context.Background()
	var docs []string
	var want []float64
	for _, c := range g.Cases[:5] { // all five share the Berlin query
		docs = append(docs, c.Passage)
		want = append(want, c.Logit)
	}
	q := g.Cases[0].Query
	got, err := ce.Rerank(ctx, q, docs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d results", len(got))
	}
	order := []int{0, 1, 2, 3, 4}
	sort.SliceStable(order, func(a, b int) bool { return want[order[a]] > want[order[b]] })
	for r, res := range got {
		if res.Index != order[r] {
			t.Fatalf("rank %d: index %d, want %d", r, res.Index, order[r])
		}
		if math.Abs(float64(res.Logit)-want[res.Index]) > goldenTol {
			t.Fatalf("rank %d: logit %v, want %v", r, res.Logit, want[res.Index])
		}
		if p := 1 / (1 + math.Exp(-want[res.Index])); math.Abs(res.Prob-p) > goldenTol {
			t.Fatalf("rank %d: prob %v, want %v", r, res.Prob, p)
		}
	}
	top, err := ce.Rerank(ctx, q, docs, 2)
	if err != nil || len(top) != 2 || top[0] != got[0] || top[1] != got[1] {
		t.Fatalf("top 2 = %v, %v", top, err)
	}
	if all, err := ce.Rerank(ctx, q, nil, 3); err != nil || len(all) != 0 {
		t.Fatalf("no docs: %v %v", all, err)
	}
}

func TestCrossEncoderEdgeInputs(t *testing.T) {
	g, _ := loadCEGolden(t)
	ce := newTinyCE(t, CrossEncoderOptions{})
	ctx := context.Background()
	long := g.Cases[12] // short query + passage truncated to 500 pieces
	var b strings.Builder
	b.WriteString(long.Passage)
	for b.Len() < 100_000 {
		b.WriteString(" more filler text")
	}
	got, err := ce.Score(ctx, long.Query, []string{b.String(), "", long.Passage})
	if err != nil {
		t.Fatal(err)
	}
	// The 100 kB passage truncates to the same 512 tokens as the golden long case.
	checkLogits(t, "100 kB passage", got[:1], []float64{long.Logit})
	checkLogits(t, "long passage", got[2:], []float64{long.Logit})
	if math.IsNaN(float64(got[1])) {
		t.Fatal("empty passage scored NaN")
	}
	if n := len(ce.enc.Tok.EncodePair(b.String(), b.String()).IDs); n != 512 {
		t.Fatalf("two 100 kB texts encoded to %d tokens, want 512", n)
	}
	both, err := ce.Score(ctx, b.String(), []string{b.String()})
	if err != nil || len(both) != 1 || math.IsNaN(float64(both[0])) {
		t.Fatalf("two 100 kB texts: %v %v", both, err)
	}
	empty, err := ce.Score(ctx, "", []string{""})
	if err != nil || len(empty) != 1 || math.IsNaN(float64(empty[0])) {
		t.Fatalf("empty pair: %v %v", empty, err)
	}
	if s, err := ce.Score(ctx, "q", nil); err != nil || len(s) != 0 {
		t.Fatalf("no passages: %v %v", s, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ce.Score(cctx, "q", []string{"p"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestCrossEncoderConcurrent(t *testing.T) {
	g, _ := loadCEGolden(t)
	ce := newTinyCE(t, CrossEncoderOptions{BatchSize: 2})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := g.Cases[w%8]
			got, err := ce.Score(ctx, c.Query, []string{c.Passage, "filler", c.Passage})
			if err != nil {
				errs <- err
				return
			}
			if math.Abs(float64(got[0])-c.Logit) > goldenTol || got[0] != got[2] {
				errs <- fmt.Errorf("worker %d: %v, want %v", w, got, c.Logit)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCrossEncoderBadModels(t *testing.T) {
	_, src := loadCEGolden(t)
	lib := onnxtest.Library(t)
	ctx := context.Background()
	model, err := os.ReadFile(filepath.Join(src, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	tokJSON, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	folder := func(model []byte) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokJSON, 0o644); err != nil {
			t.Fatal(err)
		}
		if model != nil {
			if err := os.WriteFile(filepath.Join(dir, "model.onnx"), model, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	noTok := t.TempDir()
	if err := os.WriteFile(filepath.Join(noTok, "model.onnx"), model, 0o644); err != nil {
		t.Fatal(err)
	}
	enc := onnxgraph.BERTConfig{Layers: 1, Hidden: 8, Heads: 2, Intermediate: 16, Vocab: 30522, MaxPositions: 512}
	renamed := enc
	renamed.Classifier, renamed.OutputName = true, "scores"
	cases := []struct {
		name string
		dir  string
		want []error
	}{
		{"missing folder", filepath.Join(t.TempDir(), "nope"), []error{models.ErrModelNotFound}},
		{"no model", folder(nil), []error{models.ErrModelNotFound}},
		{"no tokenizer", noTok, []error{models.ErrModelNotFound}},
		{"truncated", folder(model[:1000]), []error{models.ErrBadModel, onnx.ErrModelCorrupt}},
		{"encoder, not a classifier", folder(onnxgraph.BERT(enc).Marshal()), []error{models.ErrBadModel, onnx.ErrUnexpectedModel}},
		{"renamed output", folder(onnxgraph.BERT(renamed).Marshal()), []error{models.ErrBadModel, onnx.ErrUnexpectedModel}},
		{"not a bert", folder(onnxgraph.AddModel().Marshal()), []error{models.ErrBadModel, onnx.ErrUnexpectedModel}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ce, err := NewCrossEncoder(ctx, c.dir, CrossEncoderOptions{LibraryPath: lib, Threads: 1})
			if err == nil {
				ce.Close()
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Fatalf("%v is not %v", err, w)
				}
			}
		})
	}
}

// TestCrossEncoderCUDA checks both sides of Device "cuda" (see onnxtest.CUDA); where CUDA
// works, the encoder must also score like the CPU (within TF32 rounding).
func TestCrossEncoderCUDA(t *testing.T) {
	g, dir := loadCEGolden(t)
	lib := onnxtest.Library(t)
	ctx := context.Background()
	ce := onnxtest.CUDA(t, func(fallback bool) (*CrossEncoder, error) {
		return NewCrossEncoder(ctx, dir, CrossEncoderOptions{LibraryPath: lib, Device: "cuda", FallbackCPU: fallback})
	}, models.ErrCUDAUnavailable, onnx.ErrCUDAUnavailable)
	cpu := newTinyCE(t, CrossEncoderOptions{})
	c := g.Cases[0]
	passages := make([]string, len(g.Cases))
	for i, gc := range g.Cases {
		passages[i] = gc.Passage
	}
	want, err := cpu.Score(ctx, c.Query, passages)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ce.Score(ctx, c.Query, passages)
	if err != nil {
		t.Fatalf("CUDA score: %v", err)
	}
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-2*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("passage %d: CUDA logit %v, CPU %v", i, got[i], want[i])
		}
	}
}

func TestSigmoid(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want float64
	}{{0, 0.5}, {2, 0.8807970779778823}, {-2, 0.11920292202211755}, {-1000, 0}, {1000, 1}} {
		if got := Sigmoid(c.in); math.Abs(got-c.want) > 1e-12 || math.IsNaN(got) {
			t.Errorf("Sigmoid(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
