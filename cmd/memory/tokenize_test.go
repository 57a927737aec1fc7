package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tokenizeModelsDir returns the shared model fixtures ($MEMORY_MODELS, else
// <repo root>/../shared/models) and sets $MEMORY_MODELS to it for the test.
func tokenizeModelsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MEMORY_MODELS")
	if dir == "" {
		wd, _ := os.Getwd()
		for d := wd; filepath.Dir(d) != d; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				dir = filepath.Join(d, "..", "shared", "models")
				break
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "golden", "ce_tokens.json")); err != nil {
		if os.Getenv("MEMORY_REQUIRE_FIXTURES") == "1" {
			t.Fatalf("model fixtures not found (MEMORY_MODELS=%q)", dir)
		}
		t.Skip("model fixtures not found; set MEMORY_MODELS")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMORY_MODELS", abs)
	return abs
}

func tokenizeGolden(t *testing.T, dir, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// runTokenizeCLI runs `memory tokenize ARGS...` and decodes its JSON lines.
func runTokenizeCLI(t *testing.T, args ...string) (code int, out []tokenizeOutput, stderr string) {
	t.Helper()
	var so, se bytes.Buffer
	code = runMain(context.Background(), append([]string{"tokenize"}, args...), &so, &se)
	dec := json.NewDecoder(&so)
	for dec.More() {
		var o tokenizeOutput
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("bad JSON output %q: %v", so.String(), err)
		}
		out = append(out, o)
	}
	return code, out, se.String()
}

func TestTokenizeGoldenSingle(t *testing.T) {
	dir := tokenizeModelsDir(t)
	var g struct {
		Cases []struct {
			Text     string  `json:"text"`
			InputIDs []int64 `json:"input_ids"`
		} `json:"cases"`
	}
	tokenizeGolden(t, dir, "minilm_tokens.json", &g)
	args := []string{"--model", "all-MiniLM-L6-v2"}
	for _, c := range g.Cases {
		args = append(args, c.Text)
	}
	code, out, stderr := runTokenizeCLI(t, args...)
	if code != 0 || len(out) != len(g.Cases) {
		t.Fatalf("exit %d, %d outputs for %d inputs; stderr %q", code, len(out), len(g.Cases), stderr)
	}
	for i, c := range g.Cases {
		if !slices.Equal(out[i].InputIDs, c.InputIDs) {
			t.Errorf("case %d: got %v\nwant %v", i, out[i].InputIDs, c.InputIDs)
		}
		if out[i].TokenTypeIDs != nil || out[i].Tokens != nil {
			t.Errorf("case %d: unexpected token_type_ids/tokens", i)
		}
	}
}

func TestTokenizeGoldenPair(t *testing.T) {
	dir := tokenizeModelsDir(t)
	var g struct {
		Cases []struct {
			Query        string  `json:"query"`
			Passage      string  `json:"passage"`
			InputIDs     []int64 `json:"input_ids"`
			TokenTypeIDs []int64 `json:"token_type_ids"`
		} `json:"cases"`
	}
	tokenizeGolden(t, dir, "ce_tokens.json", &g)
	// By name, and by path to the tokenizer.json file (max length 512 by default there).
	for _, model := range []string{"ms-marco-MiniLM-L-6-v2", filepath.Join(dir, "ms-marco-MiniLM-L-6-v2", "tokenizer.json")} {
		args := []string{"--model", model, "--pair"}
		for _, c := range g.Cases {
			args = append(args, c.Query+"\t"+c.Passage)
		}
		code, out, stderr := runTokenizeCLI(t, args...)
		if code != 0 || len(out) != len(g.Cases) {
			t.Fatalf("%s: exit %d, %d outputs; stderr %q", model, code, len(out), stderr)
		}
		for i, c := range g.Cases {
			if !slices.Equal(out[i].InputIDs, c.InputIDs) || !slices.Equal(out[i].TokenTypeIDs, c.TokenTypeIDs) {
				t.Errorf("%s case %d: got %v / %v", model, i, out[i].InputIDs, out[i].TokenTypeIDs)
			}
		}
	}
}

func TestTokenizeFlags(t *testing.T) {
	dir := tokenizeModelsDir(t)
	tests := []struct {
		name   string
		args   []string
		ids    []int64
		types  []int64
		tokens []string
	}{
		{"no special (potion pieces)", []string{"--model", "potion-base-2M", "--no-special", "A man is eating food."},
			[]int64{43, 1164, 1009, 4989, 1839, 18}, nil, nil},
		{"no special empty", []string{"--model", "potion-base-2M", "--no-special", ""}, []int64{}, nil, nil},
		{"max length", []string{"--model", "all-MiniLM-L6-v2", "--max-length", "5", "--tokens", "A man is eating food."},
			[]int64{101, 1037, 2158, 2003, 102}, nil, []string{"[CLS]", "a", "man", "is", "[SEP]"}},
		{"pair max length", []string{"--model", "ms-marco-MiniLM-L-6-v2", "--pair", "--max-length", "7", "a b c\td e f g"},
			[]int64{101, 1037, 1038, 102, 1040, 1041, 102}, []int64{0, 0, 0, 0, 1, 1, 1}, nil},
		{"model folder path", []string{"--model", filepath.Join(dir, "tiny-bert-encoder"), "Hello, world!"},
			[]int64{101, 7592, 1010, 2088, 999, 102}, nil, nil},
		{"vocab.txt path", []string{"--model", filepath.Join(dir, "all-MiniLM-L6-v2", "vocab.txt"), "Hello, world!"},
			[]int64{101, 7592, 1010, 2088, 999, 102}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runTokenizeCLI(t, tc.args...)
			if code != 0 || len(out) != 1 {
				t.Fatalf("exit %d, %d outputs; stderr %q", code, len(out), stderr)
			}
			if !slices.Equal(out[0].InputIDs, tc.ids) || out[0].InputIDs == nil {
				t.Errorf("input_ids %v, want %v", out[0].InputIDs, tc.ids)
			}
			if !slices.Equal(out[0].TokenTypeIDs, tc.types) {
				t.Errorf("token_type_ids %v, want %v", out[0].TokenTypeIDs, tc.types)
			}
			if !slices.Equal(out[0].Tokens, tc.tokens) {
				t.Errorf("tokens %q, want %q", out[0].Tokens, tc.tokens)
			}
		})
	}
	// The 256 limit of the MiniLM folder applies without --max-length.
	long := strings.Repeat("word ", 400)
	if code, out, _ := runTokenizeCLI(t, "--model", "all-MiniLM-L6-v2", long); code != 0 || len(out[0].InputIDs) != 256 {
		t.Fatalf("long text: exit %d, %d ids, want 256", code, len(out[0].InputIDs))
	}
}

func TestTokenizeErrors(t *testing.T) {
	tokenizeModelsDir(t)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no model", []string{"text"}, 2, "--model is required"},
		{"no text", []string{"--model", "all-MiniLM-L6-v2"}, 2, "no TEXT"},
		{"pair without tab", []string{"--model", "ms-marco-MiniLM-L-6-v2", "--pair", "just a query"}, 2, "no TAB"},
		{"pair and no-special", []string{"--model", "ms-marco-MiniLM-L-6-v2", "--pair", "--no-special", "a\tb"}, 2, "cannot be combined"},
		{"negative max length", []string{"--model", "all-MiniLM-L6-v2", "--max-length", "-1", "x"}, 2, "--max-length"},
		{"unknown flag", []string{"--bogus", "x"}, 2, "bogus"},
		{"missing model", []string{"--model", "no-such-model-here", "x"}, 1, "not found"},
		{"corrupt tokenizer", []string{"--model", filepath.Join("testdata-nonexistent", "tokenizer.json"), "x"}, 1, "not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runTokenizeCLI(t, tc.args...)
			if code != tc.code || len(out) != 0 || !strings.Contains(stderr, tc.msg) {
				t.Fatalf("exit %d (want %d), %d outputs, stderr %q (want %q)", code, tc.code, len(out), stderr, tc.msg)
			}
		})
	}
	bad := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(bad, []byte(`{"model":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runTokenizeCLI(t, "--model", bad, "x"); code != 1 || !strings.Contains(stderr, "invalid tokenizer") {
		t.Fatalf("corrupt tokenizer.json: exit %d, stderr %q", code, stderr)
	}
}

// TestTokenizeStaticModel: a Model2Vec folder prints the word pieces the model averages,
// never [CLS]/[SEP], whether it is recognised by its model.safetensors or by its
// config.json; the same tokenizer in a folder of no static model keeps them.
func TestTokenizeStaticModel(t *testing.T) {
	dir := tokenizeModelsDir(t)
	tokJSON, err := os.ReadFile(filepath.Join(dir, "potion-base-2M", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	folder := func(extra map[string]string) string {
		d := t.TempDir()
		files := map[string]string{"tokenizer.json": string(tokJSON)}
		for k, v := range extra {
			files[k] = v
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(d, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	bySafetensors := folder(map[string]string{"model.safetensors": "not read by tokenize"})
	byConfig := folder(map[string]string{"config.json": `{"model_type": "model2vec", "normalize": true}`})
	plain := folder(map[string]string{"config.json": `{"model_type": "bert"}`})
	pieces := []int64{43, 1164, 1009, 4989, 1839, 18}
	const text = "A man is eating food."
	for _, tc := range []struct {
		name string
		args []string
		ids  []int64
	}{
		{"safetensors folder", []string{"--model", bySafetensors, "--tokens", text}, pieces},
		{"config folder", []string{"--model", byConfig, "--tokens", text}, pieces},
		{"tokenizer.json in a static folder", []string{"--model", filepath.Join(bySafetensors, "tokenizer.json"), "--tokens", text}, pieces},
		{"explicit --no-special", []string{"--model", byConfig, "--no-special", "--tokens", text}, pieces},
		{"not static", []string{"--model", plain, "--tokens", text}, append(append([]int64{2}, pieces...), 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runTokenizeCLI(t, tc.args...)
			if code != 0 || len(out) != 1 {
				t.Fatalf("exit %d, %d outputs; stderr %q", code, len(out), stderr)
			}
			if !slices.Equal(out[0].InputIDs, tc.ids) {
				t.Errorf("input_ids %v, want %v", out[0].InputIDs, tc.ids)
			}
			special := slices.Contains(out[0].Tokens, "[CLS]") || slices.Contains(out[0].Tokens, "[SEP]")
			if wantSpecial := tc.ids[0] == 2; special != wantSpecial || len(out[0].Tokens) != len(tc.ids) {
				t.Errorf("tokens %q: [CLS]/[SEP] present %v, want %v", out[0].Tokens, special, wantSpecial)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"pair", []string{"--model", bySafetensors, "--pair", "a\tb"}, "--pair does not apply"},
		{"max length", []string{"--model", byConfig, "--max-length", "4", text}, "--max-length does not apply"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runTokenizeCLI(t, tc.args...)
			if code != 2 || len(out) != 0 || !strings.Contains(stderr, tc.msg) || !strings.Contains(stderr, "static (Model2Vec)") {
				t.Fatalf("exit %d, %d outputs, stderr %q; want exit 2 and %q", code, len(out), stderr, tc.msg)
			}
		})
	}
}
