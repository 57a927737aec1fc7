//go:build cgo

package onnx

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// Enabled reports whether this build can run ONNX sessions: true with cgo (onnx_nocgo.go
// has the false twin).
const Enabled = true

var (
	envMu   sync.Mutex
	envPath string // library the environment was initialised with; "" = not initialised
)

// Init loads the ONNX Runtime library (see [ResolveLibrary]) and creates the process-wide
// environment. It is safe to call concurrently and repeatedly: after a success later calls
// return nil at once (a different explicit path is then ignored with a warning, since a
// process can hold only one environment); after a failure the next call tries again.
func Init(libraryPath string) error {
	envMu.Lock()
	defer envMu.Unlock()
	if envPath != "" {
		if libraryPath != "" && libraryPath != envPath {
			slog.Warn("onnx: runtime already initialised; ignoring other library",
				"loaded", envPath, "requested", libraryPath)
		}
		return nil
	}
	path := ResolveLibrary(libraryPath)
	if strings.ContainsRune(path, filepath.Separator) {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%w: %s: %v; %s", ErrLibrary, path, err, libraryHint())
		}
	}
	ort.SetSharedLibraryPath(path)
	if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
		return fmt.Errorf("%w: %s: %v; %s", ErrLibrary, path, err, libraryHint())
	}
	envPath = path
	slog.Debug("onnx: runtime initialised", "library", path, "version", ort.GetVersion())
	return nil
}

// Version is the version string of the loaded ONNX Runtime ("" before Init).
func Version() string {
	envMu.Lock()
	defer envMu.Unlock()
	if envPath == "" {
		return ""
	}
	return ort.GetVersion()
}

// LibraryPath is the library the environment was initialised with ("" before Init).
func LibraryPath() string {
	envMu.Lock()
	defer envMu.Unlock()
	return envPath
}

func (l OptLevel) ort() (ort.GraphOptimizationLevel, error) {
	switch strings.ToLower(string(l)) {
	case "", "all":
		return ort.GraphOptimizationLevelEnableAll, nil
	case "extended":
		return ort.GraphOptimizationLevelEnableExtended, nil
	case "basic":
		return ort.GraphOptimizationLevelEnableBasic, nil
	case "disable", "none", "off":
		return ort.GraphOptimizationLevelDisableAll, nil
	}
	return 0, fmt.Errorf("%w: unknown graph optimisation level %q", ErrBadInput, string(l))
}

// Session is an ONNX Runtime inference session with a fixed set of int64 inputs and one
// float32 output. It is safe for concurrent use.
type Session struct {
	path      string
	inputs    []string // fed inputs, in session order
	output    string
	outDims   []int64 // declared output shape (-1 = dynamic)
	device    Device
	mu        sync.RWMutex // guards s against Close during Run
	s         *ort.DynamicAdvancedSession
	modelIn   []ort.InputOutputInfo
	modelOuts []ort.InputOutputInfo
}

// Open loads the model at path with the inputs and output spec names and opts.
func Open(ctx context.Context, path string, spec Spec, opts Options) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(spec.Outputs) == 0 {
		return nil, fmt.Errorf("%w: spec names no output", ErrBadInput)
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrModelNotFound, path)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrModelNotFound, path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%w: %s is a directory", ErrModelNotFound, path)
	}
	if err := Init(opts.LibraryPath); err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ins, outs, err := inspect(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrModelCorrupt, path, err)
	}
	sess := &Session{path: path, modelIn: ins, modelOuts: outs}
	if err := sess.bind(spec); err != nil {
		return nil, err
	}

	device := opts.Device
	if device == "" {
		device = CPU
	}
	if _, err := ParseDevice(string(device)); err != nil {
		return nil, err
	}
	if device == CPU {
		s, err := newSession(path, sess, opts, false)
		if err != nil {
			return nil, err
		}
		sess.s, sess.device = s, CPU
		return sess, nil
	}
	s, cudaErr := newSession(path, sess, opts, true)
	if cudaErr == nil {
		sess.s, sess.device = s, CUDA
		return sess, nil
	}
	if !errors.Is(cudaErr, ErrCUDAUnavailable) {
		return nil, cudaErr
	}
	if device == CUDA && !opts.FallbackCPU {
		return nil, cudaErr
	}
	if device == CUDA {
		logger.Warn("onnx: CUDA unavailable, running on CPU", "model", path, "err", cudaErr)
	} else {
		logger.Debug("onnx: CUDA unavailable, running on CPU", "model", path, "err", cudaErr)
	}
	s, err = newSession(path, sess, opts, false)
	if err != nil {
		return nil, err
	}
	sess.s, sess.device = s, CPU
	return sess, nil
}

// inspect reads the model's inputs and outputs through a throwaway single-threaded,
// unoptimised session (so that inspecting a model does not start a thread pool).
func inspect(path string) ([]ort.InputOutputInfo, []ort.InputOutputInfo, error) {
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, nil, err
	}
	defer so.Destroy()
	if err := so.SetIntraOpNumThreads(1); err != nil {
		return nil, nil, err
	}
	if err := so.SetGraphOptimizationLevel(ort.GraphOptimizationLevelDisableAll); err != nil {
		return nil, nil, err
	}
	return ort.GetInputOutputInfoWithOptions(path, so)
}

// bind checks the model's interface against spec and records the names to feed.
func (sess *Session) bind(spec Spec) error {
	have := map[string]ort.InputOutputInfo{}
	for _, in := range sess.modelIn {
		have[in.Name] = in
	}
	var missing []string
	for _, name := range spec.Inputs {
		if _, ok := have[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s lacks input(s) %s (has %s)", ErrUnexpectedModel, sess.path,
			strings.Join(missing, ", "), names(sess.modelIn))
	}
	want := map[string]bool{}
	for _, n := range spec.Inputs {
		want[n] = true
	}
	for _, n := range spec.OptionalInputs {
		want[n] = true
	}
	// Feed in the model's own input order; every model input must be one we can feed.
	for _, in := range sess.modelIn {
		if !want[in.Name] {
			return fmt.Errorf("%w: %s has input %q this code cannot feed (feeds %s)",
				ErrUnexpectedModel, sess.path, in.Name,
				strings.Join(append(append([]string{}, spec.Inputs...), spec.OptionalInputs...), ", "))
		}
		if in.OrtValueType != ort.ONNXTypeTensor || in.DataType != ort.TensorElementDataTypeInt64 ||
			len(in.Dimensions) != 2 {
			return fmt.Errorf("%w: %s input %q is %s, want an int64 tensor [batch, sequence]",
				ErrUnexpectedModel, sess.path, in.Name, in.String())
		}
		sess.inputs = append(sess.inputs, in.Name)
	}
	for _, want := range spec.Outputs {
		for _, out := range sess.modelOuts {
			if out.Name != want {
				continue
			}
			if out.OrtValueType != ort.ONNXTypeTensor || out.DataType != ort.TensorElementDataTypeFloat {
				return fmt.Errorf("%w: %s output %q is %s, want a float32 tensor",
					ErrUnexpectedModel, sess.path, out.Name, out.String())
			}
			sess.output = out.Name
			sess.outDims = append([]int64(nil), out.Dimensions...)
			return nil
		}
	}
	return fmt.Errorf("%w: %s lacks output %s (has %s)", ErrUnexpectedModel, sess.path,
		strings.Join(spec.Outputs, " or "), names(sess.modelOuts))
}

func names(infos []ort.InputOutputInfo) string {
	if len(infos) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, in := range infos {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(in.Name)
	}
	return b.String()
}

// newSession creates the ORT session; cuda appends the CUDA execution provider, and any
// failure to do so is reported as ErrCUDAUnavailable.
func newSession(path string, sess *Session, opts Options, cuda bool) (*ort.DynamicAdvancedSession, error) {
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("%w: session options: %v", ErrLibrary, err)
	}
	defer so.Destroy()
	if opts.Threads > 0 {
		if err := so.SetIntraOpNumThreads(opts.Threads); err != nil {
			return nil, fmt.Errorf("%w: intra-op threads %d: %v", ErrBadInput, opts.Threads, err)
		}
	}
	if opts.InterOpThreads > 0 {
		if err := so.SetInterOpNumThreads(opts.InterOpThreads); err != nil {
			return nil, fmt.Errorf("%w: inter-op threads %d: %v", ErrBadInput, opts.InterOpThreads, err)
		}
	}
	lvl, err := opts.OptLevel.ort()
	if err != nil {
		return nil, err
	}
	if err := so.SetGraphOptimizationLevel(lvl); err != nil {
		return nil, fmt.Errorf("%w: optimisation level %q: %v", ErrBadInput, opts.OptLevel, err)
	}
	if cuda {
		if err := appendCUDA(so, opts.CUDADeviceID); err != nil {
			return nil, err
		}
	}
	s, err := ort.NewDynamicAdvancedSession(path, sess.inputs, []string{sess.output}, so)
	if err != nil {
		if cuda {
			return nil, fmt.Errorf("%w: %s: %v", ErrCUDAUnavailable, path, err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrModelCorrupt, path, err)
	}
	return s, nil
}

func appendCUDA(so *ort.SessionOptions, deviceID int) (err error) {
	// A library built without CUDA, or a CUDA build whose provider libraries are absent,
	// fails here; some failures surface only at session creation (handled by the caller).
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrCUDAUnavailable, r)
		}
	}()
	co, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCUDAUnavailable, err)
	}
	defer co.Destroy()
	if err := co.Update(map[string]string{"device_id": fmt.Sprint(deviceID)}); err != nil {
		return fmt.Errorf("%w: device %d: %v", ErrCUDAUnavailable, deviceID, err)
	}
	if err := so.AppendExecutionProviderCUDA(co); err != nil {
		return fmt.Errorf("%w: %v", ErrCUDAUnavailable, err)
	}
	return nil
}

// Device is where the session runs: CPU or CUDA (never Auto).
func (s *Session) Device() Device { return s.device }

// Path is the model file.
func (s *Session) Path() string { return s.path }

// Inputs are the input names fed to the model, in the model's order.
func (s *Session) Inputs() []string { return append([]string(nil), s.inputs...) }

// HasInput reports whether the model takes the named input.
func (s *Session) HasInput(name string) bool {
	for _, n := range s.inputs {
		if n == name {
			return true
		}
	}
	return false
}

// Output is the name of the output Run returns.
func (s *Session) Output() string { return s.output }

// OutputDims is the declared shape of the output; dynamic dimensions are -1.
func (s *Session) OutputDims() []int64 { return append([]int64(nil), s.outDims...) }

// Run feeds int64 [rows, cols] tensors by name (every input of the session must be
// present; extra names are ignored) and returns the output. out, when its capacity is
// large enough, is reused for the output data. A cancelled ctx terminates the run.
func (s *Session) Run(ctx context.Context, rows, cols int, feeds map[string][]int64, out []float32) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if rows <= 0 || cols <= 0 {
		return Result{}, fmt.Errorf("%w: empty batch %dx%d", ErrBadInput, rows, cols)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.s == nil {
		return Result{}, ErrClosed
	}
	inputs, err := s.inputTensors(rows, cols, feeds)
	defer destroyAll(inputs)
	if err != nil {
		return Result{}, err
	}

	// Pre-allocate the output when its shape is known from the model, saving a copy.
	outTensor, out := s.outputTensor(rows, cols, out)
	outputs := []ort.Value{nil}
	if outTensor != nil {
		outputs[0] = outTensor
	}
	defer func() { destroyAll(outputs) }()

	ro, release, err := terminateOnDone(ctx)
	if err != nil {
		return Result{}, err
	}
	defer release()
	err = s.s.RunWithOptions(inputs, outputs, ro)
	runtime.KeepAlive(feeds)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return Result{}, cerr
		}
		return Result{}, fmt.Errorf("onnx: run %s: %w", filepath.Base(s.path), err)
	}
	if outTensor != nil {
		return Result{Data: out, Shape: []int64(oshapeOf(outTensor))}, nil
	}
	t, ok := outputs[0].(*ort.Tensor[float32])
	if !ok {
		return Result{}, fmt.Errorf("%w: output %q is %T, want float32", ErrUnexpectedModel, s.output, outputs[0])
	}
	return Result{Data: t.GetData(), Shape: []int64(t.GetShape().Clone())}, nil
}

// destroyAll releases every non-nil value.
func destroyAll(vals []ort.Value) {
	for _, v := range vals {
		if v != nil {
			v.Destroy()
		}
	}
}

// inputTensors wraps each feed the session takes, in the session's input order, as a
// [rows, cols] tensor. A missing feed or one of the wrong length is ErrBadInput. The
// returned values (also those made before an error) are the caller's to destroy.
func (s *Session) inputTensors(rows, cols int, feeds map[string][]int64) ([]ort.Value, error) {
	shape := ort.NewShape(int64(rows), int64(cols))
	inputs := make([]ort.Value, len(s.inputs))
	for i, name := range s.inputs {
		data, ok := feeds[name]
		if !ok {
			return inputs, fmt.Errorf("%w: missing input %q", ErrBadInput, name)
		}
		if len(data) != rows*cols {
			return inputs, fmt.Errorf("%w: input %q has %d values, want %d×%d", ErrBadInput, name, len(data), rows, cols)
		}
		t, err := ort.NewTensor(shape, data)
		if err != nil {
			return inputs, fmt.Errorf("%w: input %q: %v", ErrBadInput, name, err)
		}
		inputs[i] = t
	}
	return inputs, nil
}

// outputTensor makes the output tensor over out (grown when its capacity is too small)
// when the output's shape for this batch is known from the model. It returns nil, and
// out unchanged, when the shape is not known or the tensor cannot be made; the run then
// allocates the output itself.
func (s *Session) outputTensor(rows, cols int, out []float32) (*ort.Tensor[float32], []float32) {
	oshape, ok := s.outShape(rows, cols)
	if !ok {
		return nil, out
	}
	n := int(oshape.FlattenedSize())
	if cap(out) >= n {
		out = out[:n]
	} else {
		out = make([]float32, n)
	}
	t, err := ort.NewTensor(oshape, out)
	if err != nil {
		return nil, out
	}
	return t, out
}

// terminateOnDone returns run options that terminate a run when ctx is done (nil when
// ctx can never be), and release, which stops watching ctx and frees the options; the
// caller must call release once the run has returned.
func terminateOnDone(ctx context.Context) (ro *ort.RunOptions, release func(), err error) {
	done := ctx.Done()
	if done == nil {
		return nil, func() {}, nil
	}
	ro, err = ort.NewRunOptions()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: run options: %v", ErrLibrary, err)
	}
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-done:
			ro.Terminate()
		case <-stop:
		}
	}()
	return ro, func() {
		close(stop)
		<-finished
		ro.Destroy()
	}, nil
}

func oshapeOf(t *ort.Tensor[float32]) ort.Shape { return t.GetShape().Clone() }

// outShape resolves the declared output shape for a batch: a leading dynamic dimension is
// the batch, a second dynamic one the sequence (rank 3); anything else unknown gives false.
func (s *Session) outShape(rows, cols int) (ort.Shape, bool) {
	d := s.outDims
	if len(d) == 0 || len(d) > 3 {
		return nil, false
	}
	shape := make(ort.Shape, len(d))
	for i, v := range d {
		switch {
		case v > 0:
			shape[i] = v
		case i == 0:
			shape[i] = int64(rows)
		case i == 1 && len(d) == 3:
			shape[i] = int64(cols)
		default:
			return nil, false
		}
	}
	if shape[0] != int64(rows) || (len(d) == 3 && shape[1] != int64(cols)) {
		return nil, false
	}
	return shape, true
}

// Close releases the session. Later Runs fail with ErrClosed.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.s == nil {
		return nil
	}
	err := s.s.Destroy()
	s.s = nil
	return err
}
