package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestListenProfiler: the profiler answers for a heap profile while it runs and stops
// answering once stopped.
func TestListenProfiler(t *testing.T) {
	var errb bytes.Buffer
	stop, err := listenProfiler("127.0.0.1:0", &errb)
	if err != nil {
		t.Fatal(err)
	}
	url := regexp.MustCompile(`http://\S+/debug/pprof/`).FindString(errb.String())
	if url == "" {
		stop()
		t.Fatalf("no address in %q", errb.String())
	}
	resp, err := http.Get(url + "heap?debug=1")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		stop()
		t.Fatalf("heap: %d %.80q", resp.StatusCode, body)
	}
	stop()
	if resp, err := http.Get(url + "heap?debug=1"); err == nil {
		resp.Body.Close()
		t.Fatal("the profiler still answers after stop")
	}
}

// TestIndexPprofFlag: memory index --pprof serves the profiler for the run and indexes as
// without it; an address it cannot listen on is a usage error before anything is stored.
func TestIndexPprofFlag(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(doc, []byte("profiles of a bulk load"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	code, _, errOut := runCLI(t, "index", "--store", store, "--pprof", "127.0.0.1:0", doc)
	if code != 0 || !strings.Contains(errOut, "profiler at http://127.0.0.1:") {
		t.Fatalf("index --pprof: exit %d, %q", code, errOut)
	}
	if code, out, _ := runCLI(t, "search", "--store", store, "bulk load"); code != 0 || !strings.Contains(out, "a.txt") {
		t.Fatalf("search after index --pprof: exit %d, %q", code, out)
	}
	other := filepath.Join(dir, "other")
	code, _, errOut = runCLI(t, "index", "--store", other, "--pprof", "127.0.0.1:notaport", doc)
	if code != 2 || !strings.Contains(errOut, "--pprof") {
		t.Fatalf("index --pprof with a bad address: exit %d, %q", code, errOut)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("a failed --pprof left a store: %v", err)
	}
}
