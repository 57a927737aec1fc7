package onnx

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const testMember = "package/bin/napi-v6/linux/x64/libonnxruntime.so.1"

// tgz builds a gzipped npm-style tarball holding files (name -> content).
func tgz(t *testing.T, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func hexSHA(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestPullRuntime(t *testing.T) {
	lib := "\x7fELF synthetic library bytes"
	good := tgz(t, [2]string{"package/package.json", `{"name":"onnxruntime-node"}`}, [2]string{testMember, lib},
		[2]string{"package/bin/napi-v6/linux/arm64/libonnxruntime.so.1", "other"})
	noLib := tgz(t, [2]string{"package/package.json", "{}"})
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/ok.tgz":
			w.Write(good)
		case "/nolib.tgz":
			w.Write(noLib)
		case "/garbage.tgz":
			w.Write([]byte("<html>not a tarball</html>"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	tests := []struct {
		name    string
		path    string
		sha     string
		wantErr error
	}{
		{"ok", "/ok.tgz", hexSHA(lib), nil},
		{"wrong sha", "/ok.tgz", hexSHA("something else"), ErrRuntimeChecksum},
		{"no library in archive", "/nolib.tgz", hexSHA(lib), ErrRuntimeDownload},
		{"not gzip", "/garbage.tgz", hexSHA(lib), ErrRuntimeDownload},
		{"404", "/missing.tgz", hexSHA(lib), ErrRuntimeDownload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rt")
			var progressed bool
			p, err := PullRuntime(ctx, PullOptions{URL: srv.URL + tc.path, Dir: dir, SHA256: tc.sha, Member: testMember,
				Progress: func(done, total int64) { progressed = true }})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				// Nothing installed, no temp file left behind.
				ents, _ := os.ReadDir(dir)
				if len(ents) != 0 {
					t.Fatalf("left behind: %v", ents)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p != filepath.Join(dir, SystemLibrary) {
				t.Fatalf("path %s", p)
			}
			b, err := os.ReadFile(p)
			if err != nil || string(b) != lib {
				t.Fatalf("installed %q, %v", b, err)
			}
			if st, _ := os.Stat(p); st.Mode().Perm()&0o100 == 0 {
				t.Fatalf("mode %v", st.Mode())
			}
			if !progressed {
				t.Fatal("no progress reported")
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Fatalf("dir holds %v", ents)
			}
			// A verified library is kept without a download; Force downloads again.
			before := hits.Load()
			if _, err := PullRuntime(ctx, PullOptions{URL: srv.URL + tc.path, Dir: dir, SHA256: tc.sha, Member: testMember}); err != nil {
				t.Fatal(err)
			}
			if hits.Load() != before {
				t.Fatal("verified library downloaded again")
			}
			if _, err := PullRuntime(ctx, PullOptions{URL: srv.URL + tc.path, Dir: dir, SHA256: tc.sha, Member: testMember, Force: true}); err != nil {
				t.Fatal(err)
			}
			if hits.Load() != before+1 {
				t.Fatal("Force did not download")
			}
			// A damaged install is replaced; a wrong-sha download leaves the good one.
			os.WriteFile(p, []byte("damaged"), 0o755)
			if _, err := PullRuntime(ctx, PullOptions{URL: srv.URL + tc.path, Dir: dir, SHA256: tc.sha, Member: testMember}); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(p); string(b) != lib {
				t.Fatalf("damaged library not replaced: %q", b)
			}
			if _, err := PullRuntime(ctx, PullOptions{URL: srv.URL + tc.path, Dir: dir, SHA256: hexSHA("x"), Member: testMember}); !errors.Is(err, ErrRuntimeChecksum) {
				t.Fatalf("wrong sha: %v", err)
			}
			if b, _ := os.ReadFile(p); string(b) != lib {
				t.Fatalf("good library replaced by a bad download: %q", b)
			}
		})
	}
}

func TestPullRuntimeDefaultsToPin(t *testing.T) {
	// Without an override the pinned digest applies: a synthetic library fails the check.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(tgz(t, [2]string{testMember, "not the real library"}))
	}))
	defer srv.Close()
	_, err := PullRuntime(context.Background(), PullOptions{URL: srv.URL, Dir: t.TempDir(), Member: testMember})
	if !errors.Is(err, ErrRuntimeChecksum) || !strings.Contains(err.Error(), RuntimeSHA256) {
		t.Fatalf("err %v, want a checksum error naming the pin", err)
	}
}

func TestRuntimeDir(t *testing.T) {
	t.Setenv(CacheEnv, "/c")
	if d, _ := RuntimeDir(); d != filepath.Join("/c", "onnxruntime", RuntimeVersion) {
		t.Fatalf("MEMORY_CACHE: %s", d)
	}
	t.Setenv(CacheEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	t.Setenv("HOME", "/home/u")
	d, err := RuntimeDir()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join("/xdg", "memory", "onnxruntime", RuntimeVersion); d != want {
		t.Fatalf("got %s want %s", d, want)
	}
	if !strings.Contains(libraryHint(), LibraryEnv) || !strings.Contains(libraryHint(), PullCommand) {
		t.Fatalf("hint %q", libraryHint())
	}
}

func TestCachedLibrary(t *testing.T) {
	root := t.TempDir()
	t.Setenv(CacheEnv, root)
	if p := CachedLibrary(); p != "" {
		t.Fatalf("empty cache gave %s", p)
	}
	dir, _ := RuntimeDir()
	os.MkdirAll(dir, 0o755)
	lib := filepath.Join(dir, SystemLibrary)
	os.WriteFile(lib, []byte("x"), 0o755)
	if p := CachedLibrary(); p != lib {
		t.Fatalf("got %q want %s", p, lib)
	}
}
