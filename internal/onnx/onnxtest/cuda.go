package onnxtest

import (
	"errors"
	"io"
	"testing"
)

// DeviceModel is what CUDA opens: an ONNX-backed model that reports its device.
type DeviceModel interface {
	io.Closer
	// Device is "cpu" or "cuda".
	Device() string
}

// CUDA checks the side of the CUDA provider this machine offers, for a model open opens
// with Device "cuda" (and FallbackCPU when fallback is set).
//
// Without CUDA, opening must fail with every error of want, and opening with fallback must
// give a "cpu" model; then tb skips, since CUDA inference was not checked. With CUDA, both
// opens must report "cuda", and CUDA returns the first model (closed when tb ends) for the
// caller to compare its outputs with the CPU's.
func CUDA[M DeviceModel](tb testing.TB, open func(fallback bool) (M, error), want ...error) M {
	tb.Helper()
	m, err := open(false)
	if err == nil {
		tb.Cleanup(func() { m.Close() })
	} else {
		for _, w := range want {
			if !errors.Is(err, w) {
				tb.Fatalf("Device cuda: %v, want %v", err, w)
			}
		}
	}
	fm, ferr := open(true)
	if ferr != nil {
		tb.Fatalf("Device cuda with FallbackCPU: %v", ferr)
	}
	fdev := fm.Device()
	fm.Close()
	if err != nil {
		if fdev != "cpu" {
			tb.Fatalf("Device cuda with FallbackCPU and no CUDA runs on %q, want cpu", fdev)
		}
		tb.Skipf("CUDA unavailable (%v): checked the error and the CPU fallback, not CUDA inference", err)
	}
	if m.Device() != "cuda" || fdev != "cuda" {
		tb.Fatalf("CUDA available but the model runs on %q (%q with FallbackCPU), want cuda", m.Device(), fdev)
	}
	return m
}
