//go:build cgo

package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory/internal/onnx"
	"github.com/agentmem/memory/internal/onnx/onnxgraph"
	"github.com/agentmem/memory/internal/onnx/onnxtest"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/internal/wordpiece"
	"github.com/agentmem/memory/models"
)

const goldenTol = 1e-4

type encoderGolden struct {
	ModelSHA256 string `json:"model_sha256"`
	Cases       []struct {
		ID              string      `json:"id"`
		Text            string      `json:"text"`
		InputIDs        []int64     `json:"input_ids"`
		SeqLen          int         `json:"seq_len"`
		CLS             []float64   `json:"cls_vector"`
		Mean            []float64   `json:"mean_pooled_l2_normalized"`
		SumAll          float64     `json:"sum_all"`
		SumAbsAll       float64     `json:"sum_abs_all"`
		LastHiddenState [][]float64 `json:"last_hidden_state"`
	} `json:"cases"`
	PaddedBatch struct {
		IDs      []string    `json:"ids"`
		PaddedTo int         `json:"padded_to"`
		Mean     [][]float64 `json:"mean_pooled_l2_normalized_over_real_tokens"`
	} `json:"padded_batch"`
}

func loadEncoderGolden(t testing.TB) (encoderGolden, string) {
	t.Helper()
	var g encoderGolden
	models := onnxtest.Golden(t, "tiny-bert_encoder_outputs.json", &g, 14, func() int { return len(g.Cases) })
	return g, filepath.Join(models, "tiny-bert-encoder")
}

func newTinyEmbedder(t testing.TB, opts ONNXOptions) *ONNXEmbedder {
	t.Helper()
	_, dir := loadEncoderGolden(t)
	opts.LibraryPath, opts.Threads = onnxtest.Library(t), max(opts.Threads, 1)
	return onnxtest.Open(t, func() (*ONNXEmbedder, error) { return NewONNXEmbedder(context.Background(), dir, opts) })
}

func idsEncoding(ids []int64) wordpiece.Encoding {
	mask := make([]int64, len(ids))
	for i := range mask {
		mask[i] = 1
	}
	return wordpiece.Encoding{IDs: ids, TypeIDs: make([]int64, len(ids)), Mask: mask}
}

func assertClose(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	onnxtest.Close(t, what, got, want, goldenTol)
}

func TestONNXEmbedderMetadata(t *testing.T) {
	g, _ := loadEncoderGolden(t)
	e := newTinyEmbedder(t, ONNXOptions{})
	if want := "tiny-bert-encoder@sha256:" + g.ModelSHA256[:16]; e.ID() != want {
		t.Errorf("ID = %q, want %q", e.ID(), want)
	}
	if e.Dim() != 32 {
		t.Errorf("Dim = %d, want 32", e.Dim())
	}
	if e.Device() != "cpu" {
		t.Errorf("Device = %q", e.Device())
	}
	if e.MaxLength() != 256 {
		t.Errorf("MaxLength = %d, want 256 (sentence_bert_config.json)", e.MaxLength())
	}
	if !e.normalize || e.cls {
		t.Errorf("pooling from the folder: normalize=%v cls=%v, want mean + normalize", e.normalize, e.cls)
	}
}

// TestONNXEmbedderGoldenHidden feeds the golden token ids and checks the raw hidden states.
func TestONNXEmbedderGoldenHidden(t *testing.T) {
	g, _ := loadEncoderGolden(t)
	e := newTinyEmbedder(t, ONNXOptions{})
	ctx := context.Background()
	for _, c := range g.Cases {
		t.Run(c.ID, func(t *testing.T) {
			enc := idsEncoding(c.InputIDs)
			res, err := e.enc.Session.Run(ctx, 1, len(enc.IDs), map[string][]int64{
				"input_ids": enc.IDs, "attention_mask": enc.Mask, "token_type_ids": enc.TypeIDs}, nil)
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, "cls", res.Data[:32], c.CLS)
			var sum, sumAbs float64
			for _, v := range res.Data {
				sum += float64(v)
				sumAbs += math.Abs(float64(v))
			}
			// Sums add up to seq*32 rounding errors; scale the tolerance accordingly.
			tol := goldenTol * math.Sqrt(float64(len(res.Data)))
			if math.Abs(sum-c.SumAll) > tol || math.Abs(sumAbs-c.SumAbsAll) > tol {
				t.Fatalf("sums %v %v, want %v %v", sum, sumAbs, c.SumAll, c.SumAbsAll)
			}
			for r, row := range c.LastHiddenState {
				assertClose(t, fmt.Sprintf("hidden[%d]", r), res.Data[r*32:(r+1)*32], row)
			}
		})
	}
}

// TestONNXEmbedderGoldenIDs feeds the golden ids through pooling, one at a time and all in
// one padded batch: padding must not change a vector.
func TestONNXEmbedderGoldenIDs(t *testing.T) {
	g, _ := loadEncoderGolden(t)
	ctx := context.Background()
	for _, bs := range []int{1, 3, 32} {
		t.Run(fmt.Sprintf("batch%d", bs), func(t *testing.T) {
			e := newTinyEmbedder(t, ONNXOptions{BatchSize: bs})
			encs := make([]wordpiece.Encoding, len(g.Cases))
			for i, c := range g.Cases {
				encs[i] = idsEncoding(c.InputIDs)
			}
			vecs, err := e.embedEncodings(ctx, encs)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range g.Cases {
				assertClose(t, c.ID, vecs[i], c.Mean)
			}
		})
	}
	t.Run("padded_batch", func(t *testing.T) {
		e := newTinyEmbedder(t, ONNXOptions{})
		byID := map[string][]int64{}
		for _, c := range g.Cases {
			byID[c.ID] = c.InputIDs
		}
		var encs []wordpiece.Encoding
		for _, id := range g.PaddedBatch.IDs {
			encs = append(encs, idsEncoding(byID[id]))
		}
		if b := e.enc.Tok.PadBatch(encs); b.Cols != g.PaddedBatch.PaddedTo {
			t.Fatalf("padded to %d, golden %d", b.Cols, g.PaddedBatch.PaddedTo)
		}
		vecs, err := e.embedEncodings(ctx, encs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range encs {
			assertClose(t, g.PaddedBatch.IDs[i], vecs[i], g.PaddedBatch.Mean[i])
		}
	})
}

// TestONNXEmbedderGoldenText goes end to end: text -> tokenizer -> ONNX -> pooling.
func TestONNXEmbedderGoldenText(t *testing.T) {
	g, _ := loadEncoderGolden(t)
	ctx := context.Background()
	texts := make([]string, len(g.Cases))
	for i, c := range g.Cases {
		texts[i] = c.Text
	}
	for _, bs := range []int{1, 4, 32} {
		t.Run(fmt.Sprintf("batch%d", bs), func(t *testing.T) {
			e := newTinyEmbedder(t, ONNXOptions{BatchSize: bs})
			vecs, err := e.Embed(ctx, texts)
			if err != nil {
				t.Fatal(err)
			}
			if len(vecs) != len(texts) {
				t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
			}
			for i, c := range g.Cases {
				if got := e.enc.Tok.Encode(c.Text).IDs; !equalIDs(got, c.InputIDs) {
					t.Fatalf("%s: tokenizer ids differ from golden:\n got %v\nwant %v", c.ID, got, c.InputIDs)
				}
				assertClose(t, c.ID, vecs[i], c.Mean)
			}
		})
	}
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestONNXEmbedderEdgeTexts(t *testing.T) {
	g, _ := loadEncoderGolden(t)
	e := newTinyEmbedder(t, ONNXOptions{})
	ctx := context.Background()
	byID := map[string]int{}
	for i, c := range g.Cases {
		byID[c.ID] = i
	}
	empty := g.Cases[byID["minilm-05"]]
	long := g.Cases[byID["minilm-13"]] // 596 word pieces, golden truncated to 256 tokens
	// 100 kB: the long golden text followed by filler; truncation keeps only its prefix.
	var b strings.Builder
	b.WriteString(long.Text)
	for b.Len() < 100_000 {
		b.WriteString(" lorem ipsum dolor sit amet")
	}
	huge := b.String()

	if vecs, err := e.Embed(ctx, nil); err != nil || len(vecs) != 0 {
		t.Fatalf("Embed(nil) = %v, %v", vecs, err)
	}
	vecs, err := e.Embed(ctx, []string{"", huge, long.Text})
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "empty text", vecs[0], empty.Mean)
	assertClose(t, "100 kB text", vecs[1], long.Mean)
	assertClose(t, "long text", vecs[2], long.Mean)
	if n := len(e.enc.Tok.Encode(huge).IDs); n != 256 {
		t.Fatalf("100 kB text encoded to %d tokens, want 256", n)
	}
	var norm float64
	for _, v := range vecs[1] {
		norm += float64(v) * float64(v)
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Fatalf("norm² %v, want 1", norm)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Embed(cctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Embed: %v", err)
	}
}

func TestONNXEmbedderOptions(t *testing.T) {
	g, _ := loadEncoderGolden(t)
	ctx := context.Background()
	c := g.Cases[0]
	off := false
	raw := newTinyEmbedder(t, ONNXOptions{Normalize: &off})
	v, err := raw.Embed(ctx, []string{c.Text})
	if err != nil {
		t.Fatal(err)
	}
	var norm float64
	for _, x := range v[0] {
		norm += float64(x) * float64(x)
	}
	norm = math.Sqrt(norm)
	for i := range v[0] {
		if d := math.Abs(float64(v[0][i])/norm - c.Mean[i]); d > goldenTol {
			t.Fatalf("unnormalised mean is not a multiple of the golden vector at %d", i)
		}
	}
	if math.Abs(norm-1) < 1e-3 {
		t.Fatalf("Normalize=false still normalised (norm %v)", norm)
	}
	cls := newTinyEmbedder(t, ONNXOptions{Pooling: "cls", Normalize: &off})
	v, err = cls.Embed(ctx, []string{c.Text})
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "cls pooling", v[0], c.CLS)

	short := newTinyEmbedder(t, ONNXOptions{MaxLength: 4})
	if short.MaxLength() != 4 {
		t.Fatalf("MaxLength option ignored: %d", short.MaxLength())
	}
	if _, err := NewONNXEmbedder(ctx, onnxtest.Model(t, "tiny-bert-encoder"), ONNXOptions{Pooling: "max", LibraryPath: onnxtest.Library(t)}); err == nil {
		t.Fatal("bad pooling accepted")
	}
}

func TestONNXEmbedderConcurrent(t *testing.T) {
	g, _ := loadEncoderGolden(t)
	e := newTinyEmbedder(t, ONNXOptions{BatchSize: 2})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := g.Cases[w%5]
			vecs, err := e.Embed(ctx, []string{c.Text, g.Cases[(w+1)%5].Text})
			if err != nil {
				errs <- err
				return
			}
			for i, want := range c.Mean {
				if math.Abs(float64(vecs[0][i])-want) > goldenTol {
					errs <- fmt.Errorf("worker %d: %s differs at %d", w, c.ID, i)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// copyTokenizer copies the tiny encoder's non-model files into a fresh folder.
func copyTokenizer(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	for _, f := range []string{"tokenizer.json", "vocab.txt", "config.json", "tokenizer_config.json", "sentence_bert_config.json", "modules.json"} {
		copyFile(t, filepath.Join(src, f), filepath.Join(dst, f))
	}
	return dst
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestONNXEmbedderBadModels(t *testing.T) {
	_, src := loadEncoderGolden(t)
	lib := onnxtest.Library(t)
	ctx := context.Background()
	model, err := os.ReadFile(filepath.Join(src, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(dir, name string, data []byte) string {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	flipped := append([]byte(nil), model...)
	for i := 0; i < 64; i++ { // clobber the protobuf header and the first nodes
		flipped[i] ^= 0xA5
	}
	noMask := onnxgraph.BERTConfig{Layers: 1, Hidden: 8, Heads: 2, Intermediate: 16, Vocab: 30522, MaxPositions: 512, NoAttentionMask: true}
	noTypes := noMask
	noTypes.NoAttentionMask, noTypes.NoTokenTypes = false, true
	logits := noTypes
	logits.Classifier = true

	cases := []struct {
		name string
		dir  string
		want []error
	}{
		{"missing folder", filepath.Join(t.TempDir(), "nope"), []error{models.ErrModelNotFound}},
		{"no model file", copyTokenizer(t, src), []error{models.ErrModelNotFound}},
		{"no tokenizer", write(t.TempDir(), "model.onnx", model), []error{models.ErrModelNotFound}},
		{"truncated model", write(copyTokenizer(t, src), "model.onnx", model[:len(model)/2]), []error{models.ErrBadModel, onnx.ErrModelCorrupt}},
		{"corrupt model", write(copyTokenizer(t, src), "model.onnx", flipped), []error{models.ErrBadModel, onnx.ErrModelCorrupt}},
		{"empty model", write(copyTokenizer(t, src), "model.onnx", nil), []error{models.ErrBadModel, onnx.ErrModelCorrupt}},
		{"not a bert", write(copyTokenizer(t, src), "model.onnx", onnxgraph.AddModel().Marshal()), []error{models.ErrBadModel, onnx.ErrUnexpectedModel}},
		{"no attention_mask", write(copyTokenizer(t, src), "model.onnx", onnxgraph.BERT(noMask).Marshal()), []error{models.ErrBadModel, onnx.ErrUnexpectedModel}},
		{"cross-encoder as embedder", write(copyTokenizer(t, src), "model.onnx", onnxgraph.BERT(logits).Marshal()), []error{models.ErrBadModel, onnx.ErrUnexpectedModel}},
		{"bad modules.json", write(write(t.TempDir(), "model.onnx", model), "modules.json", []byte("{")), []error{models.ErrBadModel}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "bad modules.json" {
				copyFile(t, filepath.Join(src, "tokenizer.json"), filepath.Join(c.dir, "tokenizer.json"))
			}
			e, err := NewONNXEmbedder(ctx, c.dir, ONNXOptions{LibraryPath: lib, Threads: 1})
			if err == nil {
				e.Close()
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Fatalf("error %v is not %v", err, w)
				}
			}
			t.Log(err)
		})
	}

	// A model without token_type_ids and in onnx/model.onnx is fine; its width comes from
	// the graph.
	dir := write(copyTokenizer(t, src), "onnx/model.onnx", onnxgraph.BERT(noTypes).Marshal())
	e, err := NewONNXEmbedder(ctx, dir, ONNXOptions{LibraryPath: lib, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.Dim() != 8 {
		t.Fatalf("Dim = %d, want 8", e.Dim())
	}
	if !regexp.MustCompile(`@sha256:[0-9a-f]{16}$`).MatchString(e.ID()) {
		t.Fatalf("ID %q", e.ID())
	}
	if v, err := e.Embed(ctx, []string{"hello world", ""}); err != nil || len(v) != 2 || len(v[0]) != 8 {
		t.Fatalf("Embed: %v %v", v, err)
	}
}

// TestONNXEmbedderCUDA checks both sides of Device "cuda" (see onnxtest.CUDA); where CUDA
// works, the embedder must also embed like the CPU (cosine >= 0.999, TF32 rounding aside).
// An unknown device always fails.
func TestONNXEmbedderCUDA(t *testing.T) {
	g, dir := loadEncoderGolden(t)
	lib := onnxtest.Library(t)
	ctx := context.Background()
	if _, err := NewONNXEmbedder(ctx, dir, ONNXOptions{LibraryPath: lib, Device: "tpu"}); err == nil {
		t.Fatal("device tpu accepted")
	}
	e := onnxtest.CUDA(t, func(fallback bool) (*ONNXEmbedder, error) {
		return NewONNXEmbedder(ctx, dir, ONNXOptions{LibraryPath: lib, Device: "cuda", FallbackCPU: fallback})
	}, models.ErrCUDAUnavailable, onnx.ErrCUDAUnavailable)
	cpu := newTinyEmbedder(t, ONNXOptions{})
	texts := make([]string, len(g.Cases))
	for i, c := range g.Cases {
		texts[i] = c.Text
	}
	want, err := cpu.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatalf("CUDA embed: %v", err)
	}
	for i := range want {
		if c := vecmath.Cosine(got[i], want[i]); len(got[i]) != len(want[i]) || c < 0.999 {
			t.Fatalf("text %d: CUDA vector has cosine %v with the CPU one (lengths %d, %d)", i, c, len(got[i]), len(want[i]))
		}
	}
}
