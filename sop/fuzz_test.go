package sop

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the JSON and YAML loaders. Neither may panic; what they
// return must be valid, survive a JSON round trip, and be usable by a Library.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"good", "bad", "mixed"} {
		paths, _ := filepath.Glob(filepath.Join("testdata", "load", dir, "*"))
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data, filepath.Ext(p) != ".json", false)
			}
		}
	}
	f.Add([]byte(`{"name":"a","trigger":["x y","z*"],"priority":3,"steps":["s",{"action":"t","condition":"c"}]}`), false, true)
	f.Add([]byte("a: &x [1]\nb: *x\n"), true, true)
	f.Fuzz(func(t *testing.T, data []byte, yamlFormat, strict bool) {
		file := "f.json"
		if yamlFormat {
			file = "f.yaml"
		}
		sops, err := Parse(file, data, strict)
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error %v does not match ErrInvalid", err)
		}
		if err == nil && len(sops) == 0 {
			t.Fatal("no procedures and no error")
		}
		lib := NewLibrary(Options{})
		for _, s := range sops {
			if verr := s.Validate(); verr != nil {
				t.Fatalf("Parse returned an invalid procedure: %v", verr)
			}
			out, merr := json.Marshal(s)
			if merr != nil {
				t.Fatalf("marshal: %v", merr)
			}
			back, perr := Parse("r.json", out, true)
			if perr != nil || len(back) != 1 || !reflect.DeepEqual(back[0], s) {
				t.Fatalf("round trip of %+v via %s gave %+v, %v", s, out, back, perr)
			}
			if err := lib.Put(s); err != nil {
				t.Fatalf("Put of a valid procedure: %v", err)
			}
			Render(s, RenderContext{Query: string(data)})
		}
		for _, m := range lib.Match(string(data), 3, MatchOptions{}) {
			if len(m.MatchedTriggers) == 0 {
				t.Fatalf("match without triggers: %+v", m)
			}
		}
	})
}
