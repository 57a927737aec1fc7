package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/onnx"
)

func TestRuntimePull(t *testing.T) {
	const member = "package/bin/napi-v6/linux/x64/libonnxruntime.so.1"
	lib := "synthetic ONNX Runtime library"
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: member, Mode: 0o755, Size: int64(len(lib)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(lib)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(buf.Bytes()) }))
	defer srv.Close()
	sum := sha256.Sum256([]byte(lib))

	tests := []struct {
		name    string
		sha     string
		code    int
		wantErr string
	}{
		{"verified", hex.EncodeToString(sum[:]), 0, ""},
		{"wrong sha", strings.Repeat("0", 64), 1, "checksum mismatch"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			saved := runtimePullOptions
			runtimePullOptions = onnx.PullOptions{SHA256: tc.sha, Member: member}
			defer func() { runtimePullOptions = saved }()
			cache := t.TempDir()
			t.Setenv("MEMORY_CACHE", cache)
			out, errs := mustCLI(t, tc.code, "runtime", "pull", "--url", srv.URL+"/onnxruntime-node-1.30.0.tgz")
			want := filepath.Join(cache, "onnxruntime", onnx.RuntimeVersion, onnx.SystemLibrary)
			if tc.code != 0 {
				if !strings.Contains(errs, tc.wantErr) {
					t.Fatalf("stderr %q", errs)
				}
				if _, err := os.Stat(want); err == nil {
					t.Fatal("a library that failed its check was installed")
				}
				return
			}
			if strings.TrimSpace(out) != want {
				t.Fatalf("printed %q, want %s", out, want)
			}
			if b, err := os.ReadFile(want); err != nil || string(b) != lib {
				t.Fatalf("installed %q %v", b, err)
			}
			// The loader finds it there when nothing else is configured.
			t.Setenv("MEMORY_ORT_LIB", "")
			t.Chdir(t.TempDir())
			out, _ = mustCLI(t, 0, "runtime", "path")
			if strings.TrimSpace(out) != want {
				t.Fatalf("runtime path: %q, want %s", out, want)
			}
		})
	}
	mustCLI(t, 2, "runtime")
	mustCLI(t, 2, "runtime", "fetch")
}
