package onnx

// This file holds what builds without cgo: errors, devices, options, and where the
// runtime library is looked for. onnx.go (cgo) runs sessions; onnx_nocgo.go stands in for it
// when cgo is off, failing with ErrNeedsCgo.

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmem/memory/internal/environ"
	"github.com/agentmem/memory/internal/errkind"
	"github.com/agentmem/memory/models"
)

// Errors returned by this package. They are wrapped with the offending file, name or value.
var (
	// ErrLibrary reports that the ONNX Runtime shared library cannot be found or loaded
	// (missing file, wrong architecture, or a version older than the API this build needs).
	ErrLibrary = errors.New("onnx: cannot load the ONNX Runtime library")
	// ErrCUDAUnavailable reports that CUDA was asked for but the library or machine cannot
	// provide it.
	ErrCUDAUnavailable = errkind.New("onnx: CUDA execution provider unavailable", models.ErrCUDAUnavailable)
	// ErrModelNotFound reports a missing model file.
	ErrModelNotFound = errkind.New("onnx: model file not found", models.ErrModelNotFound)
	// ErrBadModel reports a model folder that cannot be used: a corrupt file, a graph
	// without the inputs or outputs a caller needs, or a configuration file that does not
	// parse. ErrModelCorrupt and ErrUnexpectedModel match it.
	ErrBadModel = errkind.New("onnx: unusable model", models.ErrBadModel)
	// ErrModelCorrupt reports a model file that ONNX Runtime cannot load.
	ErrModelCorrupt = errkind.New("onnx: model file cannot be loaded", ErrBadModel)
	// ErrUnexpectedModel reports a model that lacks an input or output the caller needs,
	// or has one of an unusable type or shape.
	ErrUnexpectedModel = errkind.New("onnx: unexpected model interface", ErrBadModel)
	// ErrBadInput reports a Run call with inconsistent tensors.
	ErrBadInput = errors.New("onnx: bad input")
	// ErrClosed reports use of a closed session.
	ErrClosed = errors.New("onnx: session closed")
	// ErrNeedsCgo reports ONNX inference asked of a binary built with CGO_ENABLED=0: ONNX
	// Runtime is reached through cgo, so such a build has everything but sessions.
	ErrNeedsCgo = errkind.New("onnx: ONNX Runtime needs a cgo build (CGO_ENABLED=1)", models.ErrNeedsCgo)
)

// localLibrary is the path of the local cache, relative to the repository root.
var localLibrary = filepath.Join(".deps", "onnxruntime", "libonnxruntime.so.1")

// ResolveLibrary returns the library path Init would load for an explicit path (which may
// be ""): explicit, then $MEMORY_ORT_LIB, then the local .deps cache, then the user cache
// that `memory runtime pull` fills (see [RuntimeDir]), then SystemLibrary.
func ResolveLibrary(explicit string) string {
	if explicit != "" {
		return explicit
	}
	if p := environ.Get(LibraryEnv); p != "" {
		return p
	}
	var starts []string
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, s := range starts {
		if p := findUp(s, localLibrary); p != "" {
			return p
		}
	}
	if p := CachedLibrary(); p != "" {
		return p
	}
	return SystemLibrary
}

// findUp looks for rel in dir and each of its parents.
func findUp(dir, rel string) string {
	for {
		p := filepath.Join(dir, rel)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Device selects where a session runs.
type Device string

const (
	// CPU runs on the CPU execution provider. The zero Device means CPU.
	CPU Device = "cpu"
	// CUDA runs on the CUDA execution provider; without it, opening fails with
	// ErrCUDAUnavailable unless Options.FallbackCPU is set.
	CUDA Device = "cuda"
	// Auto uses CUDA when available and the CPU otherwise.
	Auto Device = "auto"
)

// ParseDevice maps "", "cpu", "cuda", "gpu" and "auto" (any case) to a Device.
func ParseDevice(s string) (Device, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "cpu":
		return CPU, nil
	case "cuda", "gpu":
		return CUDA, nil
	case "auto":
		return Auto, nil
	}
	return "", fmt.Errorf("%w: unknown device %q (want cpu, cuda or auto)", ErrBadInput, s)
}

// OptLevel is the graph optimisation level of a session.
type OptLevel string

const (
	// OptAll enables every graph optimisation. The zero OptLevel means OptAll.
	OptAll OptLevel = "all"
	// OptExtended enables basic and extended optimisations.
	OptExtended OptLevel = "extended"
	// OptBasic enables basic optimisations only.
	OptBasic OptLevel = "basic"
	// OptDisable disables graph optimisations.
	OptDisable OptLevel = "disable"
)

// check reports an unknown level as ErrBadInput.
func (l OptLevel) check() error {
	switch strings.ToLower(string(l)) {
	case "", "all", "extended", "basic", "disable", "none", "off":
		return nil
	}
	return fmt.Errorf("%w: unknown graph optimisation level %q", ErrBadInput, string(l))
}

// Options configures a session. The zero value runs on the CPU with ONNX Runtime's default
// thread count and every graph optimisation.
type Options struct {
	// LibraryPath is the ONNX Runtime shared library; "" = see ResolveLibrary.
	LibraryPath string
	// Threads is the intra-op thread count; 0 = ONNX Runtime's default (one per core).
	Threads int
	// InterOpThreads is the inter-op thread count; 0 = default.
	InterOpThreads int
	// OptLevel is the graph optimisation level; "" = OptAll.
	OptLevel OptLevel
	// Device is where the session runs; "" = CPU.
	Device Device
	// CUDADeviceID selects the GPU when Device is CUDA or Auto.
	CUDADeviceID int
	// FallbackCPU makes a CUDA session that cannot get CUDA run on the CPU (with a warning)
	// instead of failing with ErrCUDAUnavailable.
	FallbackCPU bool
	// Logger receives warnings; nil = slog.Default().
	Logger *slog.Logger
}

// Spec names the tensors a caller needs from a model.
type Spec struct {
	// Inputs must all exist (int64 tensors of rank 2, [batch, sequence]).
	Inputs []string
	// OptionalInputs are fed when the model has them.
	OptionalInputs []string
	// Outputs lists acceptable names for the one float32 output used, in preference order.
	Outputs []string
}

// Result is a float32 output tensor.
type Result struct {
	Data  []float32
	Shape []int64
}
