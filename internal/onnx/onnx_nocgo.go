//go:build !cgo

package onnx

import "context"

// This file stands in for onnx.go when cgo is off (CGO_ENABLED=0): the same names, with
// every attempt to load the runtime or open a session failing with ErrNeedsCgo, so that
// packages and commands built on this one still build (Bleve's search_no_knn.go pattern).

// Enabled reports whether this build can run ONNX sessions; false without cgo.
const Enabled = false

// Init fails with ErrNeedsCgo: there is no runtime to load without cgo.
func Init(libraryPath string) error { return ErrNeedsCgo }

// Version is "" without cgo.
func Version() string { return "" }

// LibraryPath is "" without cgo.
func LibraryPath() string { return "" }

// Session is an inference session; without cgo none can be opened.
type Session struct{}

// Open fails with ErrNeedsCgo without cgo.
func Open(ctx context.Context, path string, spec Spec, opts Options) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, ErrNeedsCgo
}

// Device is CPU.
func (s *Session) Device() Device { return CPU }

// Path is "".
func (s *Session) Path() string { return "" }

// Inputs is empty.
func (s *Session) Inputs() []string { return nil }

// HasInput is false.
func (s *Session) HasInput(name string) bool { return false }

// Output is "".
func (s *Session) Output() string { return "" }

// OutputDims is empty.
func (s *Session) OutputDims() []int64 { return nil }

// Run fails with ErrNeedsCgo.
func (s *Session) Run(ctx context.Context, rows, cols int, feeds map[string][]int64, out []float32) (Result, error) {
	return Result{}, ErrNeedsCgo
}

// Close does nothing.
func (s *Session) Close() error { return nil }
