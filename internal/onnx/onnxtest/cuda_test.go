package onnxtest

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
)

// recTB records Fatalf and Skipf instead of ending the real test.
type recTB struct {
	testing.TB
	failed, skipped bool
	msg             string
}

func (r *recTB) Helper() {}

func (r *recTB) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recTB) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

type fakeModel string

func (m fakeModel) Device() string { return string(m) }
func (m fakeModel) Close() error   { return nil }

// TestCUDA drives CUDA with fake models for both machines (with and without CUDA), since
// the test machine has only one of them.
func TestCUDA(t *testing.T) {
	errCUDA := errors.New("no CUDA")
	errOther := errors.New("corrupt model")
	model := func(dev, fallbackDev string, err, fallbackErr error) func(bool) (fakeModel, error) {
		return func(fallback bool) (fakeModel, error) {
			if fallback {
				return fakeModel(fallbackDev), fallbackErr
			}
			return fakeModel(dev), err
		}
	}
	for _, c := range []struct {
		name          string
		open          func(bool) (fakeModel, error)
		fail, skipped bool
	}{
		{"CUDA used", model("cuda", "cuda", nil, nil), false, false},
		{"CUDA available but the model runs on the CPU", model("cpu", "cpu", nil, nil), true, false},
		{"CUDA available but the fallback runs on the CPU", model("cuda", "cpu", nil, nil), true, false},
		{"no CUDA, typed error and CPU fallback", model("", "cpu", fmt.Errorf("x: %w", errCUDA), nil), false, true},
		{"no CUDA, wrong error", model("", "cpu", errOther, nil), true, false},
		{"no CUDA, fallback claims CUDA", model("", "cuda", errCUDA, nil), true, false},
		{"no CUDA, fallback fails", model("", "", errCUDA, errOther), true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &recTB{TB: t}
			done := make(chan struct{})
			var got fakeModel
			go func() {
				defer close(done)
				got = CUDA(r, c.open, errCUDA)
			}()
			<-done
			if !r.failed && !r.skipped && got != "cuda" {
				t.Fatalf("returned the %q model", got)
			}
			if r.failed != c.fail || r.skipped != c.skipped {
				t.Fatalf("failed %v skipped %v (%s), want failed %v skipped %v", r.failed, r.skipped, r.msg, c.fail, c.skipped)
			}
		})
	}
}
