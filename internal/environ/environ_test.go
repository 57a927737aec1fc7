package environ

import (
	"path/filepath"
	"testing"
)

func TestCacheDir(t *testing.T) {
	t.Setenv(Cache, "/x/cache")
	got, err := CacheDir("models")
	if err != nil || got != filepath.Join("/x/cache", "models") {
		t.Fatalf("CacheDir = %q, %v", got, err)
	}
	t.Setenv(Cache, "")
	t.Setenv("XDG_CACHE_HOME", "/y")
	t.Setenv("HOME", "/home/z")
	got, err = CacheDir("onnxruntime", "1.2")
	if err != nil || got != filepath.Join("/y", "memory", "onnxruntime", "1.2") {
		t.Fatalf("CacheDir default = %q, %v", got, err)
	}
}

func TestGetRefusesUnknown(t *testing.T) {
	t.Setenv(Models, "/m")
	if Get(Models) != "/m" {
		t.Fatal("Get(Models)")
	}
	defer func() {
		if recover() == nil {
			t.Error("Get of a variable the library does not read did not panic")
		}
	}()
	Get("PATH")
}
