package vectorstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestLoadEmbedderByName(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		opts   LoadOptions
		wantID string // "" = an error is wanted
		err    error
	}{
		{"hash", LoadOptions{}, "hash-bigram-v1/256", nil},
		{"hash:48", LoadOptions{}, "hash-bigram-v1/48", nil},
		{"hash-bigram-v1/64", LoadOptions{Recorded: true}, "hash-bigram-v1/64", nil},
		{"  hash:8  ", LoadOptions{}, "hash-bigram-v1/8", nil},
		{"hash:0", LoadOptions{}, "", ErrBadConfig},
		{"hash:abc", LoadOptions{}, "", ErrBadConfig},
		{"hash:65537", LoadOptions{}, "", ErrBadConfig},
		{"hash-bigram-v1/x", LoadOptions{Recorded: true}, "", ErrBadConfig},
		{"hash:16", LoadOptions{ONNX: ONNXOptions{Device: "cpu"}}, "hash-bigram-v1/16", nil}, // the device is ignored
		{"hash:16", LoadOptions{ONNX: ONNXOptions{QueryPrefix: new("q: ")}}, "", ErrBadConfig},
		{"hash:16", LoadOptions{ONNX: ONNXOptions{Preset: PresetE5}}, "", ErrBadConfig},
		{"", LoadOptions{}, "", ErrBadConfig},
		// A recorded identity names a model, never a folder path.
		{"../evil@sha256:00", LoadOptions{Recorded: true}, "", ErrBadConfig},
		{`..\evil@sha256:00`, LoadOptions{Recorded: true}, "", ErrBadConfig},
		{"model2vec:../evil@sha256:00", LoadOptions{Recorded: true}, "", ErrBadConfig},
		{"@sha256:00", LoadOptions{Recorded: true}, "", ErrBadConfig},
		{"openai:", LoadOptions{}, "", ErrBadConfig},
		{"openai:model", LoadOptions{}, "", ErrBadConfig},
		{"openai:model/0", LoadOptions{}, "", ErrBadConfig},
		{"openai:/8", LoadOptions{}, "", ErrBadConfig},
		{`openai:m/8+passage=unquoted`, LoadOptions{}, "", ErrBadConfig},
	} {
		e, err := LoadEmbedder(ctx, tc.name, tc.opts)
		if tc.wantID == "" {
			if !errors.Is(err, tc.err) {
				t.Errorf("LoadEmbedder(%q) = %v, %v; want %v", tc.name, e, err, tc.err)
			}
			continue
		}
		if err != nil || e.ID() != tc.wantID {
			t.Errorf("LoadEmbedder(%q) = %v, %v; want id %q", tc.name, e, err, tc.wantID)
		}
	}
}

// TestResolveEmbedderOpenAI: the hosted embedder loads by the identity it records, from
// the server and key of the environment, and reproduces that identity.
func TestResolveEmbedderOpenAI(t *testing.T) {
	s, ts := newFakeEmbeddingServer(t, 6)
	t.Setenv("OPENAI_BASE_URL", ts.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	ctx := context.Background()
	for _, id := range []string{"openai:test-embed/6", `openai:org/model-x/6+passage="passage: "`} {
		e, err := ResolveEmbedder(ctx, id, 6)
		if err != nil {
			t.Fatalf("ResolveEmbedder(%q): %v", id, err)
		}
		if e.ID() != id || e.Dim() != 6 {
			t.Fatalf("ResolveEmbedder(%q) made %q dim %d", id, e.ID(), e.Dim())
		}
		vecs, err := e.Embed(ctx, []string{"hello"})
		if err != nil || len(vecs) != 1 || len(vecs[0]) != 6 {
			t.Fatalf("Embed: %v %v", vecs, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.headers); n != 2 || s.headers[0].Get("Authorization") != "Bearer sk-from-env" {
		t.Fatalf("%d requests, first Authorization %q", n, s.headers[0].Get("Authorization"))
	}
	if got := s.requests[1].Input[0]; got != "passage: hello" {
		t.Fatalf("the recorded passage prefix was not applied: %q", got)
	}
	if s.requests[0].Model != "test-embed" || s.requests[1].Model != "org/model-x" {
		t.Fatalf("models sent: %q, %q", s.requests[0].Model, s.requests[1].Model)
	}
}

func TestResolveEmbedderDimension(t *testing.T) {
	ctx := context.Background()
	if _, err := ResolveEmbedder(ctx, "hash-bigram-v1/64", 32); !errors.Is(err, ErrDimMismatch) {
		t.Fatalf("dimension 64 resolved for a store of 32: %v", err)
	}
	e, err := ResolveEmbedder(ctx, "hash-bigram-v1/64", 64)
	if err != nil || e.Dim() != 64 {
		t.Fatalf("ResolveEmbedder: %v, %v", e, err)
	}
}

// TestRegisterEmbedder: a kind registered by another package loads its names, and the
// longest matching prefix wins over a shorter one and over the default.
func TestRegisterEmbedder(t *testing.T) {
	t.Cleanup(func() {
		embMu.Lock()
		delete(embLoaders, "test:")
		delete(embLoaders, "test:long/")
		embMu.Unlock()
	})
	var got []string
	loader := func(tag string) EmbedderLoader {
		return func(_ context.Context, name string, _ LoadOptions) (Embedder, error) {
			got = append(got, tag+" "+name)
			return NewHashEmbedder(4), nil
		}
	}
	RegisterEmbedder("test:", loader("short"))
	RegisterEmbedder("test:long/", loader("long"))
	for _, name := range []string{"test:a", "test:long/b", "test"} {
		if _, err := LoadEmbedder(context.Background(), name, LoadOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"short test:a", "long test:long/b", "short test"}
	if !slices.Equal(got, want) {
		t.Fatalf("loaders called %q, want %q", got, want)
	}
	names := Embedders()
	for _, p := range []string{"", "hash:", "hash-bigram-v1/", "model2vec:", "openai:", "test:", "test:long/"} {
		if !slices.Contains(names, p) {
			t.Errorf("Embedders() = %q lacks %q", names, p)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("Embedders() not sorted: %q", names)
	}
}

// TestLoadEmbedderUnknownModel: a model name that is neither a folder nor a ready model
// names itself and how to get it.
func TestLoadEmbedderUnknownModel(t *testing.T) {
	t.Setenv("MEMORY_MODELS", t.TempDir())
	t.Setenv("MEMORY_CACHE", t.TempDir())
	_, err := LoadEmbedder(context.Background(), "no-such-model", LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), `"no-such-model"`) || !strings.Contains(err.Error(), "models pull") {
		t.Fatalf("LoadEmbedder(no-such-model) = %v", err)
	}
}
