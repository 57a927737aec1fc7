package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestIndexInvalidUTF8Warns: JSONL lines with invalid UTF-8 (raw bytes, or an escaped
// surrogate that is not half of a pair) are stored with U+FFFD in place of each bad
// byte, and index warns once per file, naming the file, the first such line and how
// many there are (issue 39, item 7: it replaced them without a word).
func TestIndexInvalidUTF8Warns(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	good := filepath.Join(dir, "good.jsonl")
	writeFile(t, bad, strings.Join([]string{
		`{"id":"b1","text":"clean text about terns"}`,
		"{\"id\":\"b2\",\"text\":\"caf\xe9 au lait about terns\"}", // Latin-1, not UTF-8
		`{"id":"b3","text":"a lone \ud800 surrogate about terns"}`,
		`{"id":"b4","text":"a pair \ud83d\ude00 is fine, and so is \ufffd itself"}`,
		"{\"id\":\"b5\",\"text\":\"cut \xe2\x82 sequence about terns\"}",
		"{\"id\":\"b6\",\"title\":\"bad \xff title\",\"text\":\"terns\"}",
	}, "\n")+"\n")
	writeFile(t, good, `{"id":"g1","text":"a good line about terns"}`+"\n")
	store := filepath.Join(dir, "s")
	_, errs := mustCLI(t, 0, "index", "--store", store, "--strict", dir)
	warn := regexp.MustCompile(`(?m)^warning: .*invalid UTF-8.*$`).FindAllString(errs, -1)
	want := fmt.Sprintf("warning: %s:2: invalid UTF-8 in 4 lines of this file", bad)
	if len(warn) != 1 || !strings.HasPrefix(warn[0], want) {
		t.Fatalf("want one warning starting %q, got %q\nstderr:\n%s", want, warn, errs)
	}
	m := openTest(t, store)
	for id, text := range map[string]string{"b1": "clean text about terns", "b2": "caf\uFFFD au lait about terns", "b3": "a lone \uFFFD surrogate about terns",
		"b4": "a pair \U0001F600 is fine, and so is \uFFFD itself", "b5": "cut \uFFFD\uFFFD sequence about terns", "g1": "a good line about terns"} {
		d, err := m.Get(context.Background(), id)
		if err != nil || d.Text != text {
			t.Errorf("%s: %q %v, want %q", id, d.Text, err, text)
		}
	}
	if d, err := m.Get(context.Background(), "b6"); err != nil || d.Title != "bad \uFFFD title" {
		t.Errorf("b6: %+v %v", d, err)
	}
}

// TestIndexMessagesCapEcho: a skip message repeats a long id cut to 80 bytes with its
// length, not whole (issue 39, item 5).
func TestIndexMessagesCapEcho(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 1000)
	f := filepath.Join(dir, "c.jsonl")
	writeFile(t, f, `{"id":"`+long+`","text":"one"}`+"\n"+`{"id":"`+long+`","text":"two"}`+"\n"+`{"id":"`+long+`é","text":"   "}`+"\n")
	_, errs := mustCLI(t, 0, "index", "--store", filepath.Join(dir, "s"), f)
	if strings.Contains(errs, long) {
		t.Fatalf("a message repeats a 1,000-byte id whole:\n%.300s...", errs)
	}
	for _, want := range []string{
		fmt.Sprintf(`skip %s:2: duplicate id "%s…(1000 bytes)" (first read at %s:1)`, f, strings.Repeat("x", 80), f),
		fmt.Sprintf(`skip %s:3: document "%s…(1002 bytes)" has no text`, f, strings.Repeat("x", 80)),
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}
