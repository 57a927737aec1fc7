package vectorstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory/internal/wordpiece"
	"github.com/agentmem/memory/models"
)

// staticFixturesDir locates the shared model fixtures: $MEMORY_MODELS, else
// <repo root>/../shared/models. A missing directory skips unless MEMORY_REQUIRE_FIXTURES=1.
func staticFixturesDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("MEMORY_MODELS")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "..", "shared", "models")
				break
			}
		}
	}
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "potion-base-2M", "tokenizer.json")); err == nil {
			return dir
		}
	}
	if os.Getenv("MEMORY_REQUIRE_FIXTURES") == "1" {
		t.Fatalf("potion tokenizer fixture not found (MEMORY_MODELS=%q)", os.Getenv("MEMORY_MODELS"))
	}
	t.Skip("potion tokenizer fixture not found; set MEMORY_MODELS")
	return ""
}

// staticTensorSpec is one tensor to write with writeSafetensors.
type staticTensorSpec struct {
	name  string
	dtype string
	shape []int64
	data  []byte
}

// staticEncodeSafetensors builds a safetensors file: 8-byte little-endian header length, JSON
// header (padded with spaces to a multiple of 8), then the tensors' bytes in order.
func staticEncodeSafetensors(tensors []staticTensorSpec, metadata map[string]string) []byte {
	header := map[string]any{}
	if metadata != nil {
		header["__metadata__"] = metadata
	}
	var body bytes.Buffer
	for _, t := range tensors {
		begin := body.Len()
		body.Write(t.data)
		header[t.name] = map[string]any{"dtype": t.dtype, "shape": t.shape, "data_offsets": []int{begin, body.Len()}}
	}
	h, err := json.Marshal(header)
	if err != nil {
		panic(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(out, h...)
	return append(out, body.Bytes()...)
}

func staticF32Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// staticF16Bytes encodes values that are exactly representable as normal binary16 numbers (or 0).
func staticF16Bytes(v []float32) []byte {
	b := make([]byte, 0, 2*len(v))
	for _, x := range v {
		bits := math.Float32bits(x)
		sign := uint16(bits>>16) & 0x8000
		var h uint16
		if x != 0 {
			exp := int((bits>>23)&0xff) - 127 + 15
			h = sign | uint16(exp)<<10 | uint16((bits>>13)&0x3ff)
		} else {
			h = sign
		}
		b = binary.LittleEndian.AppendUint16(b, h)
	}
	return b
}

func staticBF16Bytes(v []float32) []byte {
	b := make([]byte, 0, 2*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint16(b, uint16(math.Float32bits(x)>>16))
	}
	return b
}

const (
	staticPotionVocab = 29528
	staticTestDim     = 8
)

// staticTestEmbeddings are deterministic values k/256 (|k| <= 128), exact in F32, F16 and BF16.
func staticTestEmbeddings(rows, dim int) []float32 {
	v := make([]float32, rows*dim)
	for i := range rows {
		for j := range dim {
			v[i*dim+j] = float32((i*31+j*7+i*j)%257-128) / 256
		}
	}
	return v
}

// staticWriteModel writes a Model2Vec folder with the real potion tokenizer, a config.json
// and model.safetensors from the given tensors.
func staticWriteModel(t *testing.T, config string, tensors []staticTensorSpec) string {
	t.Helper()
	tokData, err := os.ReadFile(filepath.Join(staticFixturesDir(t), "potion-base-2M", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "tiny-potion")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"tokenizer.json":    tokData,
		"model.safetensors": staticEncodeSafetensors(tensors, map[string]string{"format": "pt"}),
	}
	if config != "" {
		files["config.json"] = []byte(config)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var (
	staticTokOnce sync.Once
	staticTok     *wordpiece.Tokenizer
	staticTokErr  error
)

// staticSharedTokenizer loads the potion tokenizer once for the tests that are not about
// loading it.
func staticSharedTokenizer(t *testing.T) *wordpiece.Tokenizer {
	t.Helper()
	path := filepath.Join(staticFixturesDir(t), "potion-base-2M", "tokenizer.json")
	staticTokOnce.Do(func() { staticTok, staticTokErr = wordpiece.Load(path) })
	if staticTokErr != nil {
		t.Fatal(staticTokErr)
	}
	return staticTok
}

type staticPotionCase struct {
	ID            string  `json:"id"`
	Text          string  `json:"text"`
	IDs           []int64 `json:"ids"`
	IDsWithoutUnk []int64 `json:"ids_without_unk"`
}

func staticPotionCases(t *testing.T) []staticPotionCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(staticFixturesDir(t), "golden", "potion_tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct{ Cases []staticPotionCase }
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) != 14 {
		t.Fatalf("potion golden has %d cases, want 14", len(g.Cases))
	}
	return g.Cases
}

// staticHandEmbed is the Model2Vec computation done directly: mean of the rows of the ids
// (first maxTokens), times per-id weights, then optional L2 normalisation.
func staticHandEmbed(emb []float32, dim int, ids []int64, mapping []int64, weights []float32, maxTokens int, normalize bool) []float64 {
	out := make([]float64, dim)
	if len(ids) > maxTokens {
		ids = ids[:maxTokens]
	}
	if len(ids) == 0 {
		return out
	}
	for _, id := range ids {
		row := id
		if mapping != nil {
			row = mapping[id]
		}
		w := 1.0
		if weights != nil {
			w = float64(weights[id])
		}
		for j := range dim {
			out[j] += w * float64(emb[int(row)*dim+j])
		}
	}
	var norm float64
	for j := range out {
		out[j] /= float64(len(ids))
		norm += out[j] * out[j]
	}
	if normalize && norm > 0 {
		for j := range out {
			out[j] /= math.Sqrt(norm)
		}
	}
	return out
}

func staticAssertClose(t *testing.T, label string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", label, len(got), len(want))
	}
	for j := range got {
		if math.Abs(float64(got[j])-want[j]) > tol {
			t.Fatalf("%s: element %d = %v, want %v\n got %v\nwant %v", label, j, got[j], want[j], got, want)
		}
	}
}

func TestStaticEmbedderGolden(t *testing.T) {
	emb := staticTestEmbeddings(staticPotionVocab, staticTestDim)
	f32 := []staticTensorSpec{{"embeddings", "F32", []int64{staticPotionVocab, staticTestDim}, staticF32Bytes(emb)}}
	f16 := []staticTensorSpec{{"embeddings", "F16", []int64{staticPotionVocab, staticTestDim}, staticF16Bytes(emb)}}
	bf16 := []staticTensorSpec{{"embeddings", "BF16", []int64{staticPotionVocab, staticTestDim}, staticBF16Bytes(emb)}}
	cases := staticPotionCases(t)
	texts := make([]string, len(cases))
	for i, c := range cases {
		texts[i] = c.Text
	}
	tests := []struct {
		name      string
		config    string
		tensors   []staticTensorSpec
		opts      StaticOptions
		normalize bool
		maxTokens int
	}{
		{"f32 normalized", `{"model_type":"model2vec","normalize":true,"hidden_dim":8}`, f32, StaticOptions{}, true, 512},
		{"f32 raw mean", `{"normalize":false}`, f32, StaticOptions{}, false, 512},
		{"f16", `{"normalize":true}`, f16, StaticOptions{}, true, 512},
		{"bf16", `{"normalize":true}`, bf16, StaticOptions{}, true, 512},
		{"no config defaults to normalize", "", f32, StaticOptions{}, true, 512},
		{"option overrides config", `{"normalize":true}`, f32, StaticOptions{Normalize: new(false), MaxTokens: 5}, false, 5},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := staticWriteModel(t, tc.config, tc.tensors)
			var e *StaticEmbedder
			var err error
			if i == 0 {
				e, err = NewStaticEmbedder(dir, tc.opts) // the full load path once
			} else {
				e, err = newStaticEmbedder(dir, staticSharedTokenizer(t), tc.opts)
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Dim() != staticTestDim || e.Normalized() != tc.normalize || e.MaxTokens() != tc.maxTokens {
				t.Fatalf("Dim %d Normalized %v MaxTokens %d", e.Dim(), e.Normalized(), e.MaxTokens())
			}
			vecs, err := e.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if len(vecs) != len(texts) {
				t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
			}
			for i, c := range cases {
				want := staticHandEmbed(emb, staticTestDim, c.IDsWithoutUnk, nil, nil, tc.maxTokens, tc.normalize)
				staticAssertClose(t, c.ID, vecs[i], want, 1e-6)
				var norm float64
				for _, v := range vecs[i] {
					norm += float64(v) * float64(v)
				}
				switch {
				case len(c.IDsWithoutUnk) == 0:
					if norm != 0 {
						t.Fatalf("%s: no known pieces, want the zero vector, got %v", c.ID, vecs[i])
					}
				case tc.normalize && math.Abs(norm-1) > 1e-5:
					t.Fatalf("%s: norm² %v, want 1", c.ID, norm)
				}
			}
			q, err := e.EmbedQuery(context.Background(), texts[0])
			if err != nil {
				t.Fatal(err)
			}
			staticAssertClose(t, "EmbedQuery", q, staticHandEmbed(emb, staticTestDim, cases[0].IDsWithoutUnk, nil, nil, tc.maxTokens, tc.normalize), 1e-6)
		})
	}
	// The fixtures must exercise unknown-token dropping, the empty text and truncation.
	var unk, empty, long bool
	for _, c := range cases {
		unk = unk || len(c.IDs) != len(c.IDsWithoutUnk)
		empty = empty || len(c.IDsWithoutUnk) == 0
		long = long || len(c.IDsWithoutUnk) > defaultStaticMaxTokens
	}
	if !unk || !empty || !long {
		t.Fatalf("golden cases do not cover unk %v / empty %v / >512 pieces %v", unk, empty, long)
	}
}

func TestStaticEmbedderMappingWeights(t *testing.T) {
	const rows = 10
	emb := staticTestEmbeddings(rows, staticTestDim)
	mapping := make([]int64, staticPotionVocab)
	weights := make([]float32, staticPotionVocab)
	var mapBytes, wBytes []byte
	for i := range mapping {
		mapping[i] = int64(i % rows)
		weights[i] = float32(1+i%3) / 2
		mapBytes = binary.LittleEndian.AppendUint32(mapBytes, uint32(mapping[i]))
	}
	wBytes = staticF32Bytes(weights)
	dir := staticWriteModel(t, `{"normalize":false}`, []staticTensorSpec{
		{"embeddings", "F32", []int64{rows, staticTestDim}, staticF32Bytes(emb)},
		{"mapping", "I32", []int64{staticPotionVocab}, mapBytes},
		{"weights", "F32", []int64{staticPotionVocab}, wBytes},
	})
	e, err := newStaticEmbedder(dir, staticSharedTokenizer(t), StaticOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range staticPotionCases(t) {
		got, err := e.EmbedQuery(context.Background(), c.Text)
		if err != nil {
			t.Fatal(err)
		}
		staticAssertClose(t, c.ID, got, staticHandEmbed(emb, staticTestDim, c.IDsWithoutUnk, mapping, weights, 512, false), 1e-6)
	}
}

func TestStaticEmbedderID(t *testing.T) {
	emb := staticTestEmbeddings(staticPotionVocab, staticTestDim)
	dir := staticWriteModel(t, `{"normalize":true}`, []staticTensorSpec{{"embeddings", "F32", []int64{staticPotionVocab, staticTestDim}, staticF32Bytes(emb)}})
	data, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])[:16]
	e, err := NewStaticEmbedder(dir, StaticOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "model2vec:tiny-potion@sha256:" + digest; e.ID() != want {
		t.Fatalf("ID %q, want %q", e.ID(), want)
	}
	e, err = newStaticEmbedder(dir, staticSharedTokenizer(t), StaticOptions{Name: "potion-base-2M"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "model2vec:potion-base-2M@sha256:" + digest; e.ID() != want {
		t.Fatalf("ID %q, want %q", e.ID(), want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Embed with a cancelled context: %v", err)
	}
}

func TestStaticEmbedderBadModel(t *testing.T) {
	emb := staticF32Bytes(staticTestEmbeddings(staticPotionVocab, staticTestDim))
	good := staticEncodeSafetensors([]staticTensorSpec{{"embeddings", "F32", []int64{staticPotionVocab, staticTestDim}, emb}}, nil)
	withHeader := func(h string, body []byte) []byte {
		out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
		return append(append(out, h...), body...)
	}
	nan := staticF32Bytes([]float32{float32(math.NaN())})
	tests := []struct {
		name string
		file []byte
	}{
		{"empty", nil},
		{"short", []byte{1, 2, 3}},
		{"header longer than file", binary.LittleEndian.AppendUint64(nil, 1000)},
		{"huge header length", append(binary.LittleEndian.AppendUint64(nil, math.MaxUint64), '{', '}')},
		{"header not json", withHeader("[1,2]   ", nil)},
		{"truncated json", withHeader(`{"embeddings":`, nil)},
		{"no embeddings", withHeader(`{}`, nil)},
		{"unknown dtype", withHeader(`{"embeddings":{"dtype":"F8","shape":[1,1],"data_offsets":[0,1]}}`, []byte{0})},
		{"int embeddings", withHeader(`{"embeddings":{"dtype":"I32","shape":[29528,1],"data_offsets":[0,118112]}}`, make([]byte, 118112))},
		{"1-d embeddings", withHeader(`{"embeddings":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, make([]byte, 16))},
		{"zero dim", withHeader(`{"embeddings":{"dtype":"F32","shape":[29528,0],"data_offsets":[0,0]}}`, nil)},
		{"negative shape", withHeader(`{"embeddings":{"dtype":"F32","shape":[-1,4],"data_offsets":[0,16]}}`, make([]byte, 16))},
		{"overflowing shape", withHeader(`{"embeddings":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}}`, make([]byte, 16))},
		{"offsets beyond data", withHeader(`{"embeddings":{"dtype":"F32","shape":[1,4],"data_offsets":[0,16]}}`, make([]byte, 8))},
		{"offsets reversed", withHeader(`{"embeddings":{"dtype":"F32","shape":[1,4],"data_offsets":[16,0]}}`, make([]byte, 16))},
		{"offsets size mismatch", withHeader(`{"embeddings":{"dtype":"F32","shape":[1,4],"data_offsets":[0,12]}}`, make([]byte, 16))},
		{"one offset", withHeader(`{"embeddings":{"dtype":"F32","shape":[1,4],"data_offsets":[0]}}`, make([]byte, 16))},
		{"fewer rows than vocab", withHeader(`{"embeddings":{"dtype":"F32","shape":[4,1],"data_offsets":[0,16]}}`, make([]byte, 16))},
		{"nan", staticEncodeSafetensors([]staticTensorSpec{{"embeddings", "F32", []int64{staticPotionVocab, staticTestDim}, append(nan, emb[4:]...)}}, nil)},
		{"bad mapping", staticEncodeSafetensors([]staticTensorSpec{
			{"embeddings", "F32", []int64{2, 1}, make([]byte, 8)},
			{"mapping", "I64", []int64{staticPotionVocab}, bytes.Repeat([]byte{2, 0, 0, 0, 0, 0, 0, 0}, staticPotionVocab)},
		}, nil)},
		{"bad weights shape", staticEncodeSafetensors([]staticTensorSpec{
			{"embeddings", "F32", []int64{staticPotionVocab, staticTestDim}, emb},
			{"weights", "F32", []int64{3}, make([]byte, 12)},
		}, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := staticWriteModel(t, `{"normalize":true}`, nil)
			if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := newStaticEmbedder(dir, staticSharedTokenizer(t), StaticOptions{}); !errors.Is(err, models.ErrBadModel) {
				t.Fatalf("NewStaticEmbedder: %v, want models.ErrBadModel", err)
			}
		})
	}

	// Bad companion files.
	for _, tc := range []struct {
		name, file, content string
	}{
		{"corrupt config", "config.json", "{"},
		{"wrong model type", "config.json", `{"model_type":"bert"}`},
		{"hidden_dim mismatch", "config.json", `{"hidden_dim":16}`},
		{"corrupt tokenizer", "tokenizer.json", `{"model":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := staticWriteModel(t, `{"normalize":true}`, nil)
			os.WriteFile(filepath.Join(dir, "model.safetensors"), good, 0o644)
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := NewStaticEmbedder(dir, StaticOptions{}); !errors.Is(err, models.ErrBadModel) {
				t.Fatalf("NewStaticEmbedder: %v, want models.ErrBadModel", err)
			}
		})
	}
	for _, missing := range []string{"model.safetensors", "tokenizer.json"} {
		t.Run("missing "+missing, func(t *testing.T) {
			dir := staticWriteModel(t, `{"normalize":true}`, nil)
			os.WriteFile(filepath.Join(dir, "model.safetensors"), good, 0o644)
			os.Remove(filepath.Join(dir, missing))
			_, err := NewStaticEmbedder(dir, StaticOptions{})
			if !errors.Is(err, models.ErrBadModel) || !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("NewStaticEmbedder: %v, want models.ErrBadModel and fs.ErrNotExist", err)
			}
		})
	}
}

func TestStaticHalfToFloat32(t *testing.T) {
	tests := []struct {
		h    uint16
		want float32
	}{
		{0x0000, 0}, {0x3c00, 1}, {0xc000, -2}, {0x3555, 0.333251953125},
		{0x7bff, 65504}, {0x0001, 5.960464477539063e-08}, {0x8001, -5.960464477539063e-08},
		{0x0400, 6.103515625e-05}, {0x03ff, 6.097555160522461e-05},
		{0x7c00, float32(math.Inf(1))}, {0xfc00, float32(math.Inf(-1))},
	}
	for _, tc := range tests {
		if got := staticHalfToFloat32(tc.h); got != tc.want {
			t.Errorf("staticHalfToFloat32(%#04x) = %v, want %v", tc.h, got, tc.want)
		}
	}
	if got := staticHalfToFloat32(0x7e00); !math.IsNaN(float64(got)) {
		t.Errorf("0x7e00 = %v, want NaN", got)
	}
}

// FuzzParseSafetensors checks that the parser never panics and that every tensor it accepts
// can be sliced and decoded within the data buffer.
func FuzzParseSafetensors(f *testing.F) {
	f.Add(staticEncodeSafetensors([]staticTensorSpec{{"embeddings", "F32", []int64{2, 2}, staticF32Bytes([]float32{1, 2, 3, 4})}}, map[string]string{"format": "pt"}))
	f.Add(staticEncodeSafetensors([]staticTensorSpec{
		{"embeddings", "F16", []int64{2, 1}, staticF16Bytes([]float32{1, -2})},
		{"mapping", "I64", []int64{1}, make([]byte, 8)},
	}, nil))
	f.Add([]byte{})
	f.Add(binary.LittleEndian.AppendUint64(nil, 2))
	f.Add(append(binary.LittleEndian.AppendUint64(nil, 2), "{}"...))
	f.Fuzz(func(t *testing.T, data []byte) {
		tensors, body, err := parseSafetensors(data)
		if err != nil {
			if !errors.Is(err, models.ErrBadModel) {
				t.Fatalf("error %v does not match models.ErrBadModel", err)
			}
			return
		}
		names := make([]string, 0, len(tensors))
		for n := range tensors {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			tt := tensors[n]
			b := body[tt.DataOffsets[0]:tt.DataOffsets[1]] // must not panic
			switch {
			case strings.HasPrefix(tt.DType, "F") || tt.DType == "BF16":
				v, err := staticFloats(tt, body)
				if err == nil && len(v)*int(staticDTypeSize[tt.DType]) != len(b) {
					t.Fatalf("%s: %d values from %d bytes", n, len(v), len(b))
				}
			case tt.DType == "I32" || tt.DType == "I64":
				v, err := staticInts(tt, body)
				if err != nil || len(v)*int(staticDTypeSize[tt.DType]) != len(b) {
					t.Fatalf("%s: %d ints from %d bytes (%v)", n, len(v), len(b), err)
				}
			}
		}
	})
}

func ExampleNewStaticEmbedder() {
	// A toy Model2Vec folder: a 6-token WordPiece vocabulary and 2-d embeddings.
	dir, err := os.MkdirTemp("", "model2vec-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	tokenizer := `{"normalizer":{"type":"BertNormalizer","lowercase":true},
	 "pre_tokenizer":{"type":"BertPreTokenizer"},
	 "model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",
	  "vocab":{"[PAD]":0,"[UNK]":1,"[CLS]":2,"[SEP]":3,"cat":4,"dog":5}}}`
	emb := []float32{0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 4} // rows: [PAD] [UNK] [CLS] [SEP] cat dog
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tokenizer), 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"normalize": false}`), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"),
		staticEncodeSafetensors([]staticTensorSpec{{"embeddings", "F32", []int64{6, 2}, staticF32Bytes(emb)}}, nil), 0o644)

	e, err := NewStaticEmbedder(dir, StaticOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	vecs, err := e.Embed(context.Background(), []string{"Cat", "cat dog", "cat 🐟", ""})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Dim(), vecs)
	// Output: 2 [[3 0] [1.5 2] [3 0] [0 0]]
}

// BenchmarkStaticEmbed measures Model2Vec embedding (potion tokenizer, 29528 x 64 F32, the
// potion-base-2M shape) over the 14 golden texts.
func BenchmarkStaticEmbed(b *testing.B) {
	const dim = 64
	tokData, err := os.ReadFile(filepath.Join(staticFixturesDir(b), "potion-base-2M", "tokenizer.json"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokData, 0o644)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"normalize":true}`), 0o644)
	os.WriteFile(filepath.Join(dir, "model.safetensors"), staticEncodeSafetensors([]staticTensorSpec{
		{"embeddings", "F32", []int64{staticPotionVocab, dim}, staticF32Bytes(staticTestEmbeddings(staticPotionVocab, dim))},
	}, nil), 0o644)
	e, err := NewStaticEmbedder(dir, StaticOptions{})
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(staticFixturesDir(b), "golden", "potion_tokens.json"))
	if err != nil {
		b.Fatal(err)
	}
	var g struct{ Cases []staticPotionCase }
	if err := json.Unmarshal(data, &g); err != nil {
		b.Fatal(err)
	}
	texts := make([]string, len(g.Cases))
	bytes := 0
	for i, c := range g.Cases {
		texts[i] = c.Text
		bytes += len(c.Text)
	}
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		if _, err := e.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(texts))/b.Elapsed().Seconds(), "texts/s")
}
