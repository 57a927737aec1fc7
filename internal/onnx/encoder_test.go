package onnx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/errkind"
	"github.com/agentmem/memory/models"
)

var testErrs = Errors{
	Prefix:          "pkg",
	NotFound:        errkind.New("pkg: model file not found", ErrModelNotFound),
	BadModel:        errkind.New("pkg: unusable model", ErrBadModel),
	CUDAUnavailable: errkind.New("pkg: CUDA unavailable", ErrCUDAUnavailable),
	NeedsCgo:        errkind.New("pkg: needs cgo", ErrNeedsCgo),
}

func TestErrorKinds(t *testing.T) {
	k := errkind.New("pkg: unusable model", ErrBadModel)
	if k.Error() != "pkg: unusable model" || !errors.Is(k, ErrBadModel) || errors.Is(k, ErrModelNotFound) {
		t.Fatalf("Kind: %q, Is(ErrBadModel) %v", k, errors.Is(k, ErrBadModel))
	}
	if !errors.Is(ErrBadModel, models.ErrBadModel) || !errors.Is(ErrNeedsCgo, models.ErrNeedsCgo) ||
		!errors.Is(ErrModelNotFound, models.ErrModelNotFound) || !errors.Is(ErrCUDAUnavailable, models.ErrCUDAUnavailable) {
		t.Fatal("the ONNX layer's kinds must match package models' definitions")
	}
	if !errors.Is(ErrModelCorrupt, ErrBadModel) || !errors.Is(ErrUnexpectedModel, ErrBadModel) {
		t.Fatal("ErrModelCorrupt and ErrUnexpectedModel must be ErrBadModel kinds")
	}
	if errors.Is(ErrBadModel, ErrModelCorrupt) || errors.Is(errkind.New("other", ErrBadModel), k) {
		t.Fatal("kinds must not match each other upwards or sideways")
	}
}

func TestErrorsWrap(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		want   error // package sentinel; nil = none
		prefix bool  // message gets "pkg: "
	}{
		{"nil", nil, nil, false},
		{"not found", fmt.Errorf("%w: x.onnx", ErrModelNotFound), testErrs.NotFound, false},
		{"corrupt", fmt.Errorf("%w: x.onnx", ErrModelCorrupt), testErrs.BadModel, false},
		{"unexpected", fmt.Errorf("%w: x.onnx", ErrUnexpectedModel), testErrs.BadModel, false},
		{"cuda", fmt.Errorf("%w: no GPU", ErrCUDAUnavailable), testErrs.CUDAUnavailable, false},
		{"cgo", ErrNeedsCgo, testErrs.NeedsCgo, false},
		{"already wrapped", fmt.Errorf("%w: inner", testErrs.BadModel), testErrs.BadModel, false},
		{"library", fmt.Errorf("%w: /x.so", ErrLibrary), nil, true},
		{"bad option", fmt.Errorf("%w: device tpu", ErrBadInput), nil, true},
		{"cancelled", context.Canceled, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := testErrs.Wrap(c.err)
			if c.err == nil {
				if got != nil {
					t.Fatalf("Wrap(nil) = %v", got)
				}
				return
			}
			if !errors.Is(got, c.err) {
				t.Fatalf("Wrap lost the cause: %v", got)
			}
			if c.want != nil && !errors.Is(got, c.want) {
				t.Fatalf("Wrap = %v, want %v", got, c.want)
			}
			if c.want != nil && strings.Count(got.Error(), c.want.Error()) != 1 {
				t.Fatalf("Wrap = %q names %q other than once", got, c.want)
			}
			if p := strings.HasPrefix(got.Error(), "pkg: "); p != (c.prefix || c.want != nil) {
				t.Fatalf("Wrap = %q, prefix %v", got, p)
			}
		})
	}
}

func TestModelFileAndReadJSON(t *testing.T) {
	dir := t.TempDir()
	if _, err := ModelFile(dir, ""); !errors.Is(err, ErrModelNotFound) ||
		!strings.Contains(err.Error(), filepath.Join(dir, "onnx", "model.onnx")) {
		t.Fatalf("empty folder: %v, want ErrModelNotFound naming both candidates", err)
	}
	write := func(rel, data string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("onnx/model.onnx", "x")
	if p, err := ModelFile(dir, ""); err != nil || p != filepath.Join(dir, "onnx", "model.onnx") {
		t.Fatalf("onnx/model.onnx: %q, %v", p, err)
	}
	write("model.onnx", "x")
	if p, err := ModelFile(dir, ""); err != nil || p != filepath.Join(dir, "model.onnx") {
		t.Fatalf("model.onnx first: %q, %v", p, err)
	}
	if _, err := ModelFile(dir, "other.onnx"); !errors.Is(err, ErrModelNotFound) {
		t.Fatalf("explicit missing file: %v", err)
	}
	if sum, err := FileSHA256(filepath.Join(dir, "model.onnx")); err != nil || !strings.HasPrefix(sum, "2d711642b726b044") {
		t.Fatalf("FileSHA256 = %q, %v", sum, err)
	}

	var cfg BERTConfig
	if err := ReadJSON(filepath.Join(dir, "config.json"), &cfg, testErrs.BadModel); err != nil || cfg != (BERTConfig{}) {
		t.Fatalf("missing config.json: %+v, %v", cfg, err)
	}
	write("config.json", `{"hidden_size": 8, "max_position_embeddings": 64}`)
	if err := ReadJSON(filepath.Join(dir, "config.json"), &cfg, testErrs.BadModel); err != nil || cfg.HiddenSize != 8 || cfg.MaxPositionEmbeddings != 64 {
		t.Fatalf("config.json: %+v, %v", cfg, err)
	}
	write("config.json", `{"hidden_size": "eight"}`)
	err := ReadJSON(filepath.Join(dir, "config.json"), &cfg, testErrs.BadModel)
	if !errors.Is(err, testErrs.BadModel) || !errors.Is(err, ErrBadModel) || !strings.Contains(err.Error(), "config.json") {
		t.Fatalf("bad config.json: %v, want the package's ErrBadModel naming the file", err)
	}
}
