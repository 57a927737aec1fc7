package onnxtest

import (
	"errors"
	"testing"
)

// CUDA checks the side of the CUDA provider this machine offers, for a model open opens
// with Device "cuda" (and FallbackCPU when fallback is set), returning the device the
// model reports and a function that closes it.
//
// Without CUDA, opening must fail with every error of want, and opening with fallback must
// give a "cpu" model; then tb skips, since CUDA inference was not checked. With CUDA, both
// opens must report "cuda", and CUDA returns so that the caller compares CUDA's outputs
// with the CPU's.
func CUDA(tb testing.TB, open func(fallback bool) (device string, closeFn func(), err error), want ...error) {
	tb.Helper()
	dev, closeFn, err := open(false)
	if err == nil {
		closeFn()
	} else {
		for _, w := range want {
			if !errors.Is(err, w) {
				tb.Fatalf("Device cuda: %v, want %v", err, w)
			}
		}
	}
	fdev, fclose, ferr := open(true)
	if ferr != nil {
		tb.Fatalf("Device cuda with FallbackCPU: %v", ferr)
	}
	fclose()
	if err != nil {
		if fdev != "cpu" {
			tb.Fatalf("Device cuda with FallbackCPU and no CUDA runs on %q, want cpu", fdev)
		}
		tb.Skipf("CUDA unavailable (%v): checked the error and the CPU fallback, not CUDA inference", err)
	}
	if dev != "cuda" || fdev != "cuda" {
		tb.Fatalf("CUDA available but the model runs on %q (%q with FallbackCPU), want cuda", dev, fdev)
	}
}
