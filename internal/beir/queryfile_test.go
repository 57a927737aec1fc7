package beir

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadQueryFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("q.jsonl", `{"_id":"1","text":"alpha"}`+"\n"+`{"text":"beta"}`+"\n"+`{"_id":"3","text":"gamma"}`+"\n")
	for _, c := range []struct {
		limit      int
		ids, texts []string
	}{
		{0, []string{"1", "", "3"}, []string{"alpha", "beta", "gamma"}},
		{2, []string{"1", ""}, []string{"alpha", "beta"}},
	} {
		ids, texts, err := ReadQueryFile(good, c.limit)
		if err != nil || !slices.Equal(ids, c.ids) || !slices.Equal(texts, c.texts) {
			t.Errorf("limit %d: %q %q %v", c.limit, ids, texts, err)
		}
	}
	for _, c := range []struct{ file, body, want string }{
		{"empty.jsonl", "", "empty.jsonl: no queries"},
		{"bad.jsonl", `{"_id":"1","text":"a"}` + "\n{oops\n", "bad.jsonl:2"},
	} {
		if _, _, err := ReadQueryFile(write(c.file, c.body), 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.file, err, c.want)
		}
	}
	if _, _, err := ReadQueryFile(filepath.Join(dir, "missing.jsonl"), 0); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}
