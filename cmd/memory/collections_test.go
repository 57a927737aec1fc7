package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestCollectionsSettings: collections lists each collection's analyzer and metadata (table
// and --json); --create, --set-metadata and --set-analyzer change them, with flags anywhere;
// bad input is a clear error that changes nothing.
func TestCollectionsSettings(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "s")
	de := filepath.Join(dir, "de.jsonl")
	writeFile(t, de, `{"id":"de1","text":"Die Häuser sind groß."}`+"\n"+`{"id":"de2","text":"Der Hund schläft."}`+"\n")
	mustCLI(t, 0, "index", "--store", store, de)
	mustCLI(t, 0, "index", "--store", store, "--collection", "kb", de)

	type row struct {
		Name     string         `json:"name"`
		Count    int            `json:"count"`
		Analyzer string         `json:"analyzer"`
		Metadata map[string]any `json:"metadata"`
	}
	list := func(t *testing.T) map[string]row {
		t.Helper()
		out, _ := mustCLI(t, 0, "collections", "--json", "--store", store)
		rows := map[string]row{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var r row
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("%v: %q", err, line)
			}
			rows[r.Name] = r
		}
		return rows
	}

	steps := []struct {
		name    string
		args    []string
		code    int
		out     string // in stdout (exit 0) or stderr
		wantCol string // the collection to check afterwards
		want    row
	}{
		{"create with analyzer and metadata", []string{"--create", "gold", "--analyzer", "de", "--metadata", `{"kind":"gold","rank":1}`}, 0,
			`created collection "gold" (analyzer de)`, "gold", row{"gold", 0, "de", map[string]any{"kind": "gold", "rank": 1.0}}},
		{"create, flags after the name", []string{"--create", "plain", "--metadata", `{"a":true}`}, 0,
			`created collection "plain" (analyzer en)`, "plain", row{"plain", 0, "en", map[string]any{"a": true}}},
		{"create an existing one", []string{"--create", "kb"}, 1, "collection already exists", "kb", row{"kb", 2, "en", map[string]any{}}},
		{"create with an unknown analyzer", []string{"--create", "x", "--analyzer", "klingon"}, 1, `unknown analyzer "klingon"`, "", row{}},
		{"create with bad metadata", []string{"--create", "x", "--metadata", `{"a":{"b":1}}`}, 1, "metadata", "", row{}},
		{"create with metadata not an object", []string{"--create", "x", "--metadata", `[1]`}, 1, "want a JSON object", "", row{}},
		{"set metadata, JSON after the name", []string{"--set-metadata", "kb", `{"source":"wiki"}`}, 0,
			`set the metadata of collection "kb" (1 keys)`, "kb", row{"kb", 2, "en", map[string]any{"source": "wiki"}}},
		{"set metadata with --metadata", []string{"--metadata", `{"source":"docs","v":2}`, "--set-metadata", "kb"}, 0,
			`(2 keys)`, "kb", row{"kb", 2, "en", map[string]any{"source": "docs", "v": 2.0}}},
		{"clear metadata", []string{"--set-metadata", "kb", `{}`}, 0, `(0 keys)`, "kb", row{"kb", 2, "en", map[string]any{}}},
		{"set metadata of a missing collection", []string{"--set-metadata", "nope", `{}`}, 1, "collection not found", "", row{}},
		{"set bad metadata", []string{"--set-metadata", "gold", `{"a":[1]}`}, 1, "metadata", "gold",
			row{"gold", 0, "de", map[string]any{"kind": "gold", "rank": 1.0}}},
		{"set analyzer rebuilds BM25", []string{"--set-analyzer", "kb", "de"}, 0,
			`set the analyzer of collection "kb" from en to de and rebuilt its BM25 index (2 documents`, "kb", row{"kb", 2, "de", map[string]any{}}},
		{"set the same analyzer", []string{"--set-analyzer", "kb", "--analyzer", "de"}, 0, "already has analyzer de", "kb", row{"kb", 2, "de", map[string]any{}}},
		{"set an unknown analyzer", []string{"--set-analyzer", "kb", "klingon"}, 1, `unknown analyzer "klingon"`, "kb", row{"kb", 2, "de", map[string]any{}}},
		{"set analyzer of a missing collection", []string{"--set-analyzer", "nope", "de"}, 1, "collection not found", "", row{}},
		{"two actions", []string{"--create", "y", "--set-analyzer", "kb", "de"}, 2, "one action per call", "", row{}},
		{"analyzer without an action", []string{"--analyzer", "de"}, 2, "--analyzer goes with --create or --set-analyzer", "", row{}},
		{"metadata with delete", []string{"--delete", "plain", "--metadata", "{}"}, 2, "--metadata goes with --create or --set-metadata", "plain", row{"plain", 0, "en", map[string]any{"a": true}}},
		{"set metadata without JSON", []string{"--set-metadata", "kb"}, 2, "--set-metadata NAME needs a JSON object", "", row{}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			code, out, errs := cli(t, append([]string{"collections", "--store", store}, st.args...)...)
			if code != st.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, st.code, out, errs)
			}
			if got := out + errs; !strings.Contains(got, st.out) {
				t.Fatalf("want %q in\n%s", st.out, got)
			}
			rows := list(t)
			if _, ok := rows["x"]; ok {
				t.Fatalf("a failed create left collection x")
			}
			if st.wantCol != "" && !reflect.DeepEqual(rows[st.wantCol], st.want) {
				t.Fatalf("%s: %+v, want %+v", st.wantCol, rows[st.wantCol], st.want)
			}
		})
	}

	// The table shows the analyzer and the metadata.
	out, _ := mustCLI(t, 0, "collections", "--store", store)
	for _, re := range []string{`(?m)^COLLECTION\s+DOCUMENTS\s+ANALYZER\s+METADATA$`, `(?m)^gold\s+0\s+de\s+\{"kind":"gold","rank":1\}$`, `(?m)^kb\s+2\s+de\s+-$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Fatalf("table lacks %s:\n%s", re, out)
		}
	}
	// kb's BM25 index was rebuilt with the German analyzer: "Haus" finds "Häuser".
	out, _ = mustCLI(t, 0, "search", "--store", store, "--collection", "kb", "--mode", "bm25", "--json", "Haus")
	if !strings.Contains(out, `"de1"`) {
		t.Fatalf("search after --set-analyzer de: %s", out)
	}
	// ...and the store records it: a library open sees the same.
	m := openTest(t, store)
	if a := m.Collection("kb").Analyzer(); a != "de" {
		t.Fatalf("recorded analyzer %q", a)
	}
	if md, err := m.CollectionMetadata(context.Background(), "gold"); err != nil || md["kind"] != "gold" {
		t.Fatalf("recorded metadata %v %v", md, err)
	}
}

// TestCollectionsEmptyOrLongName: a flag that names a collection, given an empty name, is
// an error (exit 1, ErrInvalidCollection's message), not a listing that exits 0; a long
// name is repeated in messages cut to 80 bytes (issue 39, item 5).
func TestCollectionsEmptyOrLongName(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "s")
	writeFile(t, filepath.Join(dir, "a.jsonl"), `{"id":"a1","text":"one"}`+"\n")
	mustCLI(t, 0, "index", "--store", store, filepath.Join(dir, "a.jsonl"))
	for _, args := range [][]string{{"--create", ""}, {"--create="}, {"--delete", ""}, {"--rename", "", "--to", "x"}, {"--rename", "default", "--to", ""},
		{"--set-metadata", "", "{}"}, {"--set-analyzer", "", "de"}} {
		code, out, errs := cli(t, append([]string{"collections", "--store", store}, args...)...)
		name := strings.TrimPrefix(strings.TrimSuffix(args[0], "="), "--")
		if args[0] == "--rename" && args[1] != "" {
			name = "to"
		}
		if code != 1 || !strings.Contains(errs, "invalid collection name: --"+name+" names no collection (an empty name)") {
			t.Errorf("collections %q: exit %d, want 1 and a message naming --%s\nstdout:\n%s\nstderr:\n%s", args, code, name, out, errs)
		}
	}
	long := strings.Repeat("n", 150)
	code, out, errs := cli(t, "collections", "--store", store, "--set-analyzer", long, "de")
	if code != 1 || !strings.Contains(errs, "collection not found") || strings.Contains(out+errs, long) ||
		!strings.Contains(errs, `"`+strings.Repeat("n", 80)+`…(150 bytes)"`) {
		t.Fatalf("--set-analyzer of a missing collection with a 150-byte name: exit %d, want 1 and the name cut to 80 bytes\n%s%s", code, out, errs)
	}
}
