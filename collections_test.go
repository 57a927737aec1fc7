package memory

import (
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/memtest"
)

// TestLongCollectionName: a name valid by its bytes (at most 200) whose escaped form, the
// name of its index directories, would pass what a file system allows per name is refused
// with ErrInvalidCollection when the collection is created, by every way of creating one,
// and nothing is created (issue 21, point 8: it made an empty collection whose every write
// failed with "file name too long"). A name at the limit works.
func TestLongCollectionName(t *testing.T) {
	long := strings.Repeat("é", 80) // 160 bytes, 480 escaped
	atLimit := strings.Repeat("é", maxCollectionDirName/6) + strings.Repeat("a", maxCollectionDirName%6)
	if n := len(url.PathEscape(atLimit)); n != maxCollectionDirName || len(atLimit) > 200 {
		t.Fatalf("atLimit: %d bytes escaped, %d raw", n, len(atLimit))
	}
	cases := []struct {
		name string
		ok   bool
	}{
		{strings.Repeat("a", 200), true},
		{long, false},
		{strings.Repeat(" ", 100), false}, // 300 escaped
		{strings.Repeat("%", 90), false},  // 270 escaped
		{atLimit, true},
		{atLimit + "a", false}, // room is left for a suffix of the directory name
	}
	dir := t.TempDir()
	m := openT(t, dir)
	for _, tc := range cases {
		label := tc.name[:min(len(tc.name), 12)]
		creators := []struct {
			how string
			fn  func() error
		}{
			{"CreateCollection", func() error { _, err := m.CreateCollection(tc.name); return err }},
			{"Add", func() error { return m.Collection(tc.name).Add(bg, Document{ID: "x", Text: "long names"}) }},
			{"Upsert", func() error { return m.Collection(tc.name).Upsert(bg, Document{ID: "x", Text: "long names"}) }},
		}
		for _, c := range creators {
			err := c.fn()
			if tc.ok {
				if err != nil {
					t.Fatalf("%s %q… (%d bytes escaped): %v", c.how, label, len(url.PathEscape(tc.name)), err)
				}
				continue
			}
			if !errors.Is(err, ErrInvalidCollection) {
				t.Fatalf("%s %q… (%d bytes escaped): %v, want ErrInvalidCollection", c.how, label, len(url.PathEscape(tc.name)), err)
			}
			if !strings.Contains(err.Error(), "239") {
				t.Fatalf("%s: %v does not name the limit", c.how, err)
			}
		}
		if got := slices.Contains(memtest.Collections(t, m), tc.name); got != tc.ok {
			t.Fatalf("%q…: listed %v, want %v", label, got, tc.ok)
		}
		if tc.ok {
			res, err := m.Collection(tc.name).Search(bg, "long names", WithMode(BM25))
			if err != nil || len(res) != 1 {
				t.Fatalf("%q…: search %v, %d results", label, err, len(res))
			}
		}
	}
	must(t, m.Close())
	m = openT(t, dir)
	if n := memtest.Count(t, m.Collection(atLimit)); n != 1 {
		t.Fatalf("collection at the limit after reopen: %d documents", n)
	}
}

// TestLongCollectionNameOfOlderVersion: a collection whose name is too long for its index
// directories, as versions before the check created them (empty: their writes failed),
// can still be listed, counted, read and deleted; a write to it is ErrInvalidCollection.
func TestLongCollectionNameOfOlderVersion(t *testing.T) {
	long := strings.Repeat("é", 80)
	dir := t.TempDir()
	m := openT(t, dir)
	must(t, m.Add(bg, Document{ID: "a", Text: "default collection"}))
	must(t, m.db.CreateCollection(long, defaultMaxCollections, nil)) // what an older version did
	must(t, m.Close())

	ro, err := Open(dir, ReadOnly())
	must(t, err)
	if !slices.Contains(memtest.Collections(t, ro), long) {
		t.Fatal("read-only: the long-named collection is not listed")
	}
	if _, err := ro.Collection(long).Search(bg, "anything", WithMode(BM25)); err != nil {
		t.Fatalf("read-only search: %v", err)
	}
	must(t, ro.Close())

	m = openT(t, dir)
	if !slices.Contains(memtest.Collections(t, m), long) {
		t.Fatal("the long-named collection is not listed")
	}
	if n := memtest.Count(t, m.Collection(long)); n != 0 {
		t.Fatalf("count %d", n)
	}
	if _, err := m.Collection(long).Get(bg, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get: %v, want ErrNotFound", err)
	}
	if err := m.Collection(long).Add(bg, Document{ID: "x", Text: "y"}); !errors.Is(err, ErrInvalidCollection) {
		t.Fatalf("write: %v, want ErrInvalidCollection", err)
	}
	if err := m.DeleteCollection(bg, long); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if slices.Contains(memtest.Collections(t, m), long) {
		t.Fatal("still listed after delete")
	}
	must(t, m.Close())
	m = openT(t, dir)
	if slices.Contains(memtest.Collections(t, m), long) || memtest.Count(t, m) != 1 {
		t.Fatalf("after reopen: %q, %d documents in default", memtest.Collections(t, m), memtest.Count(t, m))
	}
}

// TestCollectionNameMessages: an invalid collection name is refused with an error that
// says which rule it breaks and states the rules, and echoes at most the name's first 64
// bytes with its length (issue 39, point 5: a 100 KB name was echoed whole, with no word
// of what is allowed). So does every other error naming a collection.
func TestCollectionNameMessages(t *testing.T) {
	m := openT(t, t.TempDir())
	huge := strings.Repeat("a", 100_000)
	for _, c := range []struct {
		name, says string
	}{
		{huge, "is 100000 bytes long"},
		{"bad\xffname", "is not valid UTF-8"},
		{"tab\there", "control character (U+0009 at byte 3)"},
		{"..", `".." names a directory`},
		{".", `"." names a directory`},
		{strings.Repeat("é", 80), "takes 480 bytes as a directory name"},
	} {
		for how, op := range map[string]func() error{
			"Add":              func() error { return m.Collection(c.name).Add(bg, Document{ID: "x", Text: "y"}) },
			"CreateCollection": func() error { _, err := m.CreateCollection(c.name); return err },
		} {
			err := op()
			if !errors.Is(err, ErrInvalidCollection) {
				t.Fatalf("%s %.12q: %v, want ErrInvalidCollection", how, c.name, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.says) || len(msg) > 600 {
				t.Errorf("%s %.12q: the error (%d bytes) does not say %q in a few lines: %.300s", how, c.name, len(msg), c.says, msg)
			}
			if !strings.Contains(msg, "239 bytes") && !strings.Contains(msg, "1 to 200 bytes of valid UTF-8 without control characters") {
				t.Errorf("%s %.12q: the error does not state the rules: %s", how, c.name, msg)
			}
		}
	}
	// Every other operation naming a collection: refused (or not found) without the name
	// echoed whole.
	for how, op := range map[string]func() error{
		"GetCollection":    func() error { _, err := m.GetCollection(huge); return err },
		"Count":            func() error { _, err := m.Collection(huge).Count(bg); return err },
		"Get":              func() error { _, err := m.Collection(huge).Get(bg, "x"); return err },
		"Search":           func() error { _, err := m.Collection(huge).Search(bg, "x", WithMode(BM25)); return err },
		"Delete":           func() error { return m.Collection(huge).Delete(bg, "x") },
		"DeleteCollection": func() error { return m.DeleteCollection(bg, huge) },
		"RenameCollection": func() error { return m.RenameCollection(bg, huge, "c2") },
		"Rename to":        func() error { return m.RenameCollection(bg, DefaultCollection, huge) },
	} {
		err := op()
		if err == nil {
			t.Errorf("%s of a 100 KB name: no error", how)
			continue
		}
		if msg := err.Error(); len(msg) > 600 {
			t.Errorf("%s: the error echoes the name whole (%d bytes): %.200s", how, len(msg), msg)
		}
	}
}
