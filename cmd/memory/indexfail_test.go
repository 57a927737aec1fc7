package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// cancelOnWrite is a stderr that cancels a context when a line containing trigger is
// written to it (the first progress line: one batch is stored).
type cancelOnWrite struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	trigger string
	cancel  context.CancelFunc
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.trigger) {
		c.cancel()
	}
	return len(p), nil
}

// TestIndexFailureReport stops `memory index` after its first batch (its context ends,
// as on Ctrl-C) and checks that it says what it stored and what it did not: the counts,
// the last document stored, the first one not stored (with file and line), and how to
// resume; then that running the same command again stores everything (issue 24, point 5).
func TestIndexFailureReport(t *testing.T) {
	ackEveryWrite()
	dir := t.TempDir()
	corpus := filepath.Join(dir, "c.jsonl")
	var b strings.Builder
	const n, batch = 50, 10
	for i := range n {
		line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("d%03d", i), "text": fmt.Sprintf("document number %d", i)})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(corpus, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	args := []string{"index", "--store", store, "--batch", fmt.Sprint(batch), corpus}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errw := &cancelOnWrite{trigger: "indexing: ", cancel: cancel}
	var out bytes.Buffer
	if code := runMain(ctx, args, &out, errw); code != 1 {
		t.Fatalf("stopped index: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out.String(), errw.buf.String())
	}
	errs := errw.buf.String()
	for _, want := range []string{
		fmt.Sprintf("index failed: %d documents were stored (durably) before the error; 0 skipped (reported above); %d not stored.", batch, n-batch),
		fmt.Sprintf(`last document stored:      "d%03d" (%s:%d)`, batch-1, corpus, batch),
		fmt.Sprintf(`first document not stored: "d%03d" (%s:%d)`, batch, corpus, batch+1),
		"to resume: run the same memory index command again",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("the failure report lacks %q:\n%s", want, errs)
		}
	}
	if m := regexp.MustCompile(`index failed: (\d+) documents were stored`).FindStringSubmatch(errs); m == nil || m[1] != fmt.Sprint(batch) {
		t.Errorf("the report's first line changed (the kill tests read it):\n%s", errs)
	}
	got, count := storeContents(t, store)
	if count != batch {
		t.Fatalf("the store holds %d documents, the report said %d", count, batch)
	}
	for i := range batch {
		if _, ok := got[fmt.Sprintf("d%03d", i)]; !ok {
			t.Fatalf("d%03d was reported stored and is not in the store", i)
		}
	}

	// Resuming as the report says stores the rest.
	mustCLI(t, 0, args...)
	if _, count := storeContents(t, store); count != n {
		t.Fatalf("after the resume the store holds %d documents, want %d", count, n)
	}
}
