//go:build cgo

package onnx

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/onnx/onnxgraph"
	"github.com/agentmem/memory/internal/onnx/onnxtest"
)

var bertSpec = Spec{
	Inputs:         []string{"input_ids", "attention_mask"},
	OptionalInputs: []string{"token_type_ids"},
	Outputs:        []string{"last_hidden_state"},
}

func writeModel(t *testing.T, g *onnxgraph.Graph) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(p, g.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func small(classifier bool) onnxgraph.BERTConfig {
	return onnxgraph.BERTConfig{Layers: 1, Hidden: 16, Heads: 2, Intermediate: 32, Vocab: 200, MaxPositions: 64, Seed: 7, Classifier: classifier}
}

func TestOpenAndRun(t *testing.T) {
	opts := Options{LibraryPath: onnxtest.Library(t), Threads: 1}
	ctx := context.Background()
	p := writeModel(t, onnxgraph.BERT(small(false)))
	s, err := Open(ctx, p, bertSpec, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Device() != CPU {
		t.Fatalf("device %q", s.Device())
	}
	if got := s.Inputs(); len(got) != 3 {
		t.Fatalf("inputs %v", got)
	}
	ids := []int64{1, 5, 7, 2, 1, 9, 2, 0}
	mask := []int64{1, 1, 1, 1, 1, 1, 1, 0}
	types := make([]int64, 8)
	res, err := s.Run(ctx, 2, 4, map[string][]int64{"input_ids": ids, "attention_mask": mask, "token_type_ids": types}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{2, 4, 16}; len(res.Shape) != 3 || res.Shape[0] != want[0] || res.Shape[1] != want[1] || res.Shape[2] != want[2] {
		t.Fatalf("shape %v want %v", res.Shape, want)
	}
	// Row 1 without its padding must equal row 1 of the padded batch on real tokens.
	one, err := s.Run(ctx, 1, 3, map[string][]int64{"input_ids": ids[4:7], "attention_mask": mask[4:7], "token_type_ids": types[4:7]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3*16; i++ {
		if d := one.Data[i] - res.Data[4*16+i]; d > 1e-5 || d < -1e-5 {
			t.Fatalf("padding changed element %d: %v vs %v", i, one.Data[i], res.Data[4*16+i])
		}
	}
	// Bad feeds.
	if _, err := s.Run(ctx, 2, 4, map[string][]int64{"input_ids": ids, "attention_mask": mask}, nil); !errors.Is(err, ErrBadInput) {
		t.Fatalf("missing input: %v", err)
	}
	if _, err := s.Run(ctx, 2, 5, map[string][]int64{"input_ids": ids, "attention_mask": mask, "token_type_ids": types}, nil); !errors.Is(err, ErrBadInput) {
		t.Fatalf("bad length: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Run(cctx, 2, 4, map[string][]int64{"input_ids": ids, "attention_mask": mask, "token_type_ids": types}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	s.Close()
	if _, err := s.Run(ctx, 2, 4, map[string][]int64{"input_ids": ids, "attention_mask": mask, "token_type_ids": types}, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	opts := Options{LibraryPath: onnxtest.Library(t), Threads: 1}
	ctx := context.Background()
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.onnx")
	good := onnxgraph.BERT(small(false)).Marshal()
	if err := os.WriteFile(corrupt, good[:len(good)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.onnx")
	if err := os.WriteFile(garbage, []byte("this is not an onnx model"), 0o644); err != nil {
		t.Fatal(err)
	}
	noMask := small(false)
	noMask.NoAttentionMask = true
	renamed := small(false)
	renamed.OutputName = "token_embeddings"
	noTypes := small(false)
	noTypes.NoTokenTypes = true
	cases := []struct {
		name string
		path string
		want error
	}{
		{"missing", filepath.Join(dir, "nope.onnx"), ErrModelNotFound},
		{"directory", dir, ErrModelNotFound},
		{"truncated", corrupt, ErrModelCorrupt},
		{"garbage", garbage, ErrModelCorrupt},
		{"float input", writeModel(t, onnxgraph.AddModel()), ErrUnexpectedModel},
		{"no attention_mask", writeModel(t, onnxgraph.BERT(noMask)), ErrUnexpectedModel},
		{"wrong output", writeModel(t, onnxgraph.BERT(renamed)), ErrUnexpectedModel},
		{"no token types is fine", writeModel(t, onnxgraph.BERT(noTypes)), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(ctx, c.path, bertSpec, opts)
			if !errors.Is(err, c.want) {
				t.Fatalf("Open(%s) = %v, want %v", c.path, err, c.want)
			}
			if err == nil {
				defer s.Close()
				if s.HasInput("token_type_ids") {
					t.Fatal("token_type_ids reported for a model without it")
				}
			} else {
				t.Log(err)
			}
		})
	}
}

// TestCUDA checks both sides of the CUDA provider. Where CUDA works, a CUDA session must
// report CUDA, compute what the CPU computes (within TF32 rounding), and Auto and
// FallbackCPU must pick CUDA too. Where it does not, asking for CUDA must fail with
// ErrCUDAUnavailable and FallbackCPU and Auto must give a CPU session; the test then skips,
// since CUDA inference was not checked.
func TestCUDA(t *testing.T) {
	lib := onnxtest.Library(t)
	ctx := context.Background()
	p := writeModel(t, onnxgraph.BERT(small(false)))
	s, err := Open(ctx, p, bertSpec, Options{LibraryPath: lib, Device: CUDA})
	if err != nil {
		if !errors.Is(err, ErrCUDAUnavailable) {
			t.Fatalf("CUDA on a CPU-only library: %v, want ErrCUDAUnavailable", err)
		}
		for _, o := range []Options{{Device: CUDA, FallbackCPU: true}, {Device: Auto}} {
			o.LibraryPath = lib
			s, err := Open(ctx, p, bertSpec, o)
			if err != nil {
				t.Fatalf("%+v: %v", o, err)
			}
			if s.Device() != CPU {
				t.Fatalf("%+v: device %q, want cpu", o, s.Device())
			}
			s.Close()
		}
		t.Skipf("CUDA unavailable (%v): checked the error and the CPU fallback, not CUDA inference", err)
	}
	defer s.Close()
	if s.Device() != CUDA {
		t.Fatalf("Device CUDA opened a %q session", s.Device())
	}
	cpu, err := Open(ctx, p, bertSpec, Options{LibraryPath: lib, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	feeds := map[string][]int64{
		"input_ids":      {1, 5, 7, 2, 1, 9, 2, 0},
		"attention_mask": {1, 1, 1, 1, 1, 1, 1, 0},
		"token_type_ids": make([]int64, 8),
	}
	want, err := cpu.Run(ctx, 2, 4, feeds, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Run(ctx, 2, 4, feeds, nil)
	if err != nil {
		t.Fatalf("CUDA run: %v", err)
	}
	if len(got.Data) != len(want.Data) {
		t.Fatalf("CUDA output has %d values, CPU %d", len(got.Data), len(want.Data))
	}
	for i := range want.Data {
		if d := float64(got.Data[i] - want.Data[i]); math.Abs(d) > 1e-2*(1+math.Abs(float64(want.Data[i]))) {
			t.Fatalf("element %d: CUDA %v, CPU %v", i, got.Data[i], want.Data[i])
		}
	}
	for _, o := range []Options{{Device: CUDA, FallbackCPU: true}, {Device: Auto}} {
		o.LibraryPath = lib
		s, err := Open(ctx, p, bertSpec, o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		if s.Device() != CUDA {
			t.Fatalf("%+v: device %q with CUDA available, want cuda", o, s.Device())
		}
		s.Close()
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]Device{"": CPU, "CPU": CPU, "cuda": CUDA, "gpu": CUDA, "auto": Auto} {
		if got, err := ParseDevice(in); err != nil || got != want {
			t.Errorf("ParseDevice(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseDevice("tpu"); !errors.Is(err, ErrBadInput) {
		t.Errorf("ParseDevice(tpu) = %v", err)
	}
	if _, err := OptLevel("max").ort(); !errors.Is(err, ErrBadInput) {
		t.Errorf("OptLevel(max) = %v", err)
	}
}

func TestResolveLibrary(t *testing.T) {
	t.Setenv(LibraryEnv, "/x/lib.so")
	if got := ResolveLibrary("/explicit.so"); got != "/explicit.so" {
		t.Fatalf("explicit: %s", got)
	}
	if got := ResolveLibrary(""); got != "/x/lib.so" {
		t.Fatalf("env: %s", got)
	}
	t.Setenv(LibraryEnv, "")
	t.Setenv(CacheEnv, t.TempDir())
	got := ResolveLibrary("")
	if _, err := os.Stat(filepath.Join(onnxtest.RepoRoot(), localLibrary)); err == nil {
		if got != filepath.Join(onnxtest.RepoRoot(), localLibrary) {
			t.Fatalf("local cache not found: %s", got)
		}
	} else if got != SystemLibrary {
		t.Fatalf("fallback: %s", got)
	}
}

// TestResolveLibraryUserCache: outside the repository, with no $MEMORY_ORT_LIB, the library
// `memory runtime pull` installed is found, and without it the system name is used.
func TestResolveLibraryUserCache(t *testing.T) {
	t.Setenv(LibraryEnv, "")
	t.Setenv(CacheEnv, t.TempDir())
	t.Chdir(t.TempDir())
	if exe, _ := os.Executable(); findUp(filepath.Dir(exe), localLibrary) != "" {
		t.Skip("test binary lives under a tree with .deps")
	}
	if got := ResolveLibrary(""); got != SystemLibrary {
		t.Fatalf("empty cache: %s", got)
	}
	dir, _ := RuntimeDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, SystemLibrary)
	if err := os.WriteFile(lib, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := ResolveLibrary(""); got != lib {
		t.Fatalf("got %s want %s", got, lib)
	}
}

// TestLibraryErrors runs in a child process, since a process initialises ONNX Runtime once:
// a missing library and a file that is not a library give ErrLibrary, and a later call
// with the right library still succeeds.
func TestLibraryErrors(t *testing.T) {
	lib := onnxtest.Library(t)
	if os.Getenv("ONNX_TEST_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLibraryErrors$", "-test.v")
		cmd.Env = append(os.Environ(), "ONNX_TEST_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	ctx := context.Background()
	model := writeModel(t, onnxgraph.BERT(small(false)))
	notLib := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(notLib, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(t.TempDir(), "missing", "libonnxruntime.so.1"), notLib} {
		_, err := Open(ctx, model, bertSpec, Options{LibraryPath: bad})
		if !errors.Is(err, ErrLibrary) {
			t.Fatalf("library %s: %v, want ErrLibrary", bad, err)
		}
		if msg := err.Error(); !strings.Contains(msg, LibraryEnv) || !strings.Contains(msg, PullCommand) {
			t.Fatalf("error does not say how to get the library: %v", err)
		}
		t.Log(err)
	}
	if Version() != "" || LibraryPath() != "" {
		t.Fatalf("runtime reported as loaded after failures: %q %q", Version(), LibraryPath())
	}
	s, err := Open(ctx, model, bertSpec, Options{LibraryPath: lib})
	if err != nil {
		t.Fatalf("retry with the right library: %v", err)
	}
	s.Close()
	if Version() == "" || LibraryPath() != lib {
		t.Fatalf("Version %q LibraryPath %q", Version(), LibraryPath())
	}
}
