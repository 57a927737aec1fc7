package models_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/agentmem/memory/models"
)

func ExampleLookup() {
	m, err := models.Lookup("all-MiniLM-L6-v2")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Repo, m.Kind, m.Dim, len(m.Files), m.Pinned())
	// Output: Xenova/all-MiniLM-L6-v2 embedder 384 9 true
}

// Pull a model described by the caller from a mirror (here a local test server) into a
// cache folder; the file is checked against its pinned sha256 before it is used.
func ExamplePullModel() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/acme/greeting/resolve/main/hello.txt" {
			w.Write([]byte("hello\n"))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	cache, _ := os.MkdirTemp("", "models-example")
	defer os.RemoveAll(cache)

	m := models.Model{Name: "greeting", Repo: "acme/greeting", Revision: "main", Files: []models.File{{
		Path: "hello.txt", Size: 6,
		SHA256: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
	}}}
	dir, err := models.PullModel(context.Background(), m, models.Options{BaseURL: srv.URL, CacheDir: cache})
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _ := os.ReadFile(filepath.Join(dir, "hello.txt"))
	fmt.Printf("%s %q\n", filepath.Base(dir), data)
	// Output: greeting "hello\n"
}
