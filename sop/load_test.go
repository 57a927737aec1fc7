package sop

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

func names(sops []Procedure) []string {
	out := make([]string, len(sops))
	for i, s := range sops {
		out[i] = s.Name
	}
	return out
}

// problems flattens a joined error into its *ValidationError values.
func problems(t *testing.T, err error) []*ValidationError {
	t.Helper()
	var out []*ValidationError
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var ve *ValidationError
		if !errors.As(e, &ve) {
			t.Errorf("error %v is not a *ValidationError", e)
			return
		}
		if !errors.Is(e, ErrInvalid) {
			t.Errorf("error %v does not match ErrInvalid", e)
		}
		out = append(out, ve)
	}
	if err != nil {
		walk(err)
	}
	return out
}

func TestLoadDirGood(t *testing.T) {
	lib, err := LoadDir(filepath.Join("testdata", "load", "good"), Options{Strict: true})
	if err != nil {
		t.Fatalf("LoadDir: %v", err)
	}
	want := []string{"debug_python_code", "deploy_web_app", "git_bisect", "git_merge_conflict", "refactor_code", "write_docs"}
	if got := names(lib.List("")); !slices.Equal(got, want) {
		t.Fatalf("loaded %v, want %v", got, want)
	}
	if got := names(lib.List("git")); !slices.Equal(got, []string{"git_bisect", "git_merge_conflict"}) {
		t.Errorf("List(git) = %v", got)
	}
	if got := lib.Categories(); !slices.Equal(got, []string{"coding", "devops", "docs", "git"}) {
		t.Errorf("Categories = %v", got)
	}
	d, err := lib.Get("debug_python_code")
	if err != nil {
		t.Fatal(err)
	}
	wantD := Procedure{Name: "debug_python_code", Description: "Find and fix a bug in Python code.",
		Trigger: Triggers{"debug", "bug", "error", "not working"}, Category: "coding", Priority: 8,
		Steps: []Step{{Action: "Reproduce the error."}, {Action: "Run the tests again.", Condition: "fix proposed"}}}
	if !reflect.DeepEqual(d, wantD) {
		t.Errorf("Get = %+v\nwant %+v", d, wantD)
	}
	y, _ := lib.Get("deploy_web_app")
	if !slices.Equal(y.Trigger, Triggers{"deploy", "release", "rollout"}) || y.Steps[1].Condition != "error rate rises" {
		t.Errorf("YAML procedure decoded as %+v", y)
	}
	r, _ := lib.Get("refactor_code")
	if !slices.Equal(r.Trigger, Triggers{"refactor", "clean up"}) || r.Steps[0].Action != "Make sure tests cover the code." {
		t.Errorf("YAML list triggers and string steps decoded as %+v", r)
	}
}

func TestLoadDirBad(t *testing.T) {
	dir := filepath.Join("testdata", "load", "bad")
	lib, err := LoadDir(dir, Options{Strict: true})
	if lib == nil || lib.Len() != 0 {
		t.Fatalf("bad dir loaded procedures: %v", lib.List(""))
	}
	type key struct{ file, field string }
	got := map[key]string{}
	for _, ve := range problems(t, err) {
		got[key{filepath.Base(ve.File), ve.Field}] = ve.Problem
		if !strings.Contains(ve.Error(), ve.File) {
			t.Errorf("message %q does not name the file", ve.Error())
		}
	}
	want := map[key]string{
		{"missing_name.json", "name"}:            "missing name",
		{"priority_high.json", "priority"}:       "11 is outside 0..10",
		{"priority_negative.json", "priority"}:   "-1 is outside 0..10",
		{"empty_steps.json", "steps"}:            "no steps",
		{"empty_action.json", "steps[1].action"}: "empty action",
		{"trigger_type.json", "trigger"}:         "must be a string or a list of strings",
		{"unknown_field.json", "owner"}:          "unknown field",
	}
	for k, p := range want {
		if got[k] != p {
			t.Errorf("%s field %q: problem %q, want %q", k.file, k.field, got[k], p)
		}
	}
	if p := got[key{"syntax.json", ""}]; !strings.Contains(p, "invalid JSON at line 3") {
		t.Errorf("syntax.json: problem %q, want the line of the syntax error", p)
	}
	if p := got[key{"syntax.yaml", ""}]; !strings.HasPrefix(p, "invalid YAML") {
		t.Errorf("syntax.yaml: problem %q", p)
	}
	if len(got) != len(want)+2 {
		t.Errorf("got %d problems, want %d: %v", len(got), len(want)+2, got)
	}

	// Not strict: the unknown field is ignored and that procedure loads.
	lib, err = LoadDir(dir, Options{})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("lenient load of bad dir: error %v, want ErrInvalid for the invalid files", err)
	}
	if got := names(lib.List("")); !slices.Equal(got, []string{"unknown"}) {
		t.Errorf("lenient load of bad dir = %v, want [unknown]", got)
	}
}

func TestLoadDirMixed(t *testing.T) {
	lib, err := LoadDir(filepath.Join("testdata", "load", "mixed"), Options{})
	if got := names(lib.List("")); !slices.Equal(got, []string{"debug_python_code", "ok_one", "ok_three"}) {
		t.Errorf("mixed dir loaded %v", got)
	}
	if d, _ := lib.Get("debug_python_code"); d.Priority != 8 {
		t.Errorf("the first file must win a duplicate name, got priority %d", d.Priority)
	}
	ps := problems(t, err)
	if len(ps) != 3 {
		t.Fatalf("got %d problems, want 3: %v", len(ps), err)
	}
	if !errors.Is(err, ErrDuplicateName) {
		t.Errorf("error does not match ErrDuplicateName: %v", err)
	}
	wantMsgs := []string{
		`b_duplicate.json: procedure "debug_python_code": name: duplicate name`,
		`c_array.json: [1] procedure "bad_two": priority: 99 is outside 0..10`,
		`d_no_steps.json: procedure "no_steps": steps: no steps`,
	}
	for _, w := range wantMsgs {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

func TestLoadDirMissing(t *testing.T) {
	lib, err := LoadDir(filepath.Join(t.TempDir(), "nope"), Options{})
	if err == nil || !errors.Is(err, os.ErrNotExist) || lib == nil {
		t.Fatalf("LoadDir(missing) = %v, %v", lib, err)
	}
}

func TestParseTriggerForms(t *testing.T) {
	tests := []struct {
		name, file, data string
		want             Triggers
	}{
		{"comma string", "a.json", `{"name":"a","trigger":" debug , bug,, error ","steps":["x"]}`, Triggers{"debug", "bug", "error"}},
		{"list", "a.json", `{"name":"a","trigger":["not working","a, b"],"steps":["x"]}`, Triggers{"not working", "a, b"}},
		{"null", "a.json", `{"name":"a","trigger":null,"steps":["x"]}`, nil},
		{"absent", "a.json", `{"name":"a","steps":["x"]}`, nil},
		{"yaml string", "a.yaml", "name: a\ntrigger: debug, bug\nsteps: [x]\n", Triggers{"debug", "bug"}},
		{"yaml list", "a.yml", "name: a\ntrigger: [debug, 'a, b']\nsteps: [x]\n", Triggers{"debug", "a, b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.file, []byte(tt.data), true)
			if err != nil || len(got) != 1 {
				t.Fatalf("Parse = %v, %v", got, err)
			}
			if !slices.Equal(got[0].Trigger, tt.want) {
				t.Errorf("triggers %q, want %q", got[0].Trigger, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, file, data string
		field, problem   string
	}{
		{"empty file", "a.json", "  \n", "", "empty file"},
		{"not object", "a.json", `"hello"`, "", "not a procedure object or an array of them"},
		{"trailing data", "a.json", `{"name":"a","steps":["x"]} {}`, "", "invalid JSON: data after the top-level value"},
		{"empty array", "a.json", `[]`, "", "empty array"},
		{"name not string", "a.json", `{"name":5,"steps":["x"]}`, "name", "must be a string"},
		{"fractional priority", "a.json", `{"name":"a","priority":2.5,"steps":["x"]}`, "priority", "2.5 is not an integer"},
		{"priority string", "a.json", `{"name":"a","priority":"high","steps":["x"]}`, "priority", "must be a number"},
		{"steps object", "a.json", `{"name":"a","steps":{"action":"x"}}`, "steps", "must be a list of steps"},
		{"step number", "a.json", `{"name":"a","steps":[1]}`, "steps[0]", "must be an object or a string"},
		{"step unknown field", "a.json", `{"name":"a","steps":[{"action":"x","when":"y"}]}`, "steps[0].when", "unknown field"},
		{"blank name", "a.json", `{"name":"  ","steps":["x"]}`, "name", "missing name"},
		{"padded name", "a.json", `{"name":" a","steps":["x"]}`, "name", "has leading or trailing blanks"},
		{"control char", "a.json", `{"name":"a\u0007","steps":["x"]}`, "name", "contains invalid or control characters"},
		{"yaml scalar", "a.yaml", "just text\n", "", "not a procedure mapping or a sequence of them"},
		{"yaml priority", "a.yaml", "name: a\npriority: 12\nsteps: [x]\n", "priority", "12 is outside 0..10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.file, []byte(tt.data), true)
			if len(got) != 0 {
				t.Errorf("Parse returned procedures %v", got)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse error %v is not a ValidationError", err)
			}
			if ve.File != tt.file || ve.Field != tt.field || ve.Problem != tt.problem {
				t.Errorf("got {File:%q Field:%q Problem:%q}, want {%q %q %q}", ve.File, ve.Field, ve.Problem, tt.file, tt.field, tt.problem)
			}
		})
	}
}

func validSOP(name string) Procedure {
	return Procedure{Name: name, Trigger: Triggers{name}, Priority: 5, Steps: []Step{{Action: "do " + name}}}
}

func TestLibraryAddPutRemove(t *testing.T) {
	lib := NewLibrary(Options{})
	if err := lib.Add(validSOP("a"), validSOP("b")); err != nil {
		t.Fatal(err)
	}
	// A batch with one bad procedure adds nothing.
	bad := validSOP("c")
	bad.Steps = nil
	if err := lib.Add(validSOP("d"), bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Add(bad) = %v", err)
	}
	if err := lib.Add(validSOP("a")); !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("Add(duplicate) = %v", err)
	}
	if err := lib.Add(validSOP("e"), validSOP("e")); !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("Add(twice in a batch) = %v", err)
	}
	if got := names(lib.List("")); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("after failed adds: %v", got)
	}
	// Put replaces, and the index follows: the old trigger no longer matches.
	repl := validSOP("a")
	repl.Trigger = Triggers{"zebra"}
	if err := lib.Put(repl); err != nil {
		t.Fatal(err)
	}
	if ms := lib.Match("a", 0, MatchOptions{}); len(ms) != 0 {
		t.Errorf("old trigger still matches: %v", ms)
	}
	if ms := lib.Match("zebra", 0, MatchOptions{}); len(ms) != 1 || ms[0].SOP.Name != "a" {
		t.Errorf("new trigger: %v", ms)
	}
	if err := lib.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if err := lib.Remove("a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove twice = %v", err)
	}
	if _, err := lib.Get("a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(removed) = %v", err)
	}
	if ms := lib.Match("zebra", 0, MatchOptions{}); len(ms) != 0 {
		t.Errorf("removed procedure still matches: %v", ms)
	}
	// Returned procedures are copies.
	got, _ := lib.Get("b")
	got.Steps[0].Action = "changed"
	if again, _ := lib.Get("b"); again.Steps[0].Action != "do b" {
		t.Error("Get returned the library's own slice")
	}
}

func TestSaveDirRoundTrip(t *testing.T) {
	src := filepath.Join("testdata", "load", "good")
	lib, err := LoadDir(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	odd := validSOP("Odd Name/with:chars")
	if err := lib.Add(odd); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A stale procedure file, an array file holding a kept procedure, a broken file and an
	// unrelated file: SaveDir removes the first two only.
	must := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must("stale.json", `{"name":"stale","trigger":"x","steps":["y"]}`)
	must("array.json", `[{"name":"git_bisect","trigger":"x","steps":["y"]}]`)
	must("broken.json", `{"name":`)
	must("notes.md", "keep me")
	if err := lib.SaveDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"stale.json", "array.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not removed: %v", name, err)
		}
	}
	for _, name := range []string{"broken.json", "notes.md", "debug_python_code.json", fileName(odd.Name)} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s missing: %v", name, err)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}
	if err := os.Remove(filepath.Join(dir, "broken.json")); err != nil {
		t.Fatal(err)
	}
	back, err := LoadDir(dir, Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.List(""), lib.List("")) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", back.List(""), lib.List(""))
	}
}

func TestFileName(t *testing.T) {
	tests := map[string]string{
		"debug_python_code": "debug_python_code.json",
		"v1.2-fix":          "v1.2-fix.json",
	}
	for in, want := range tests {
		if got := fileName(in); got != want {
			t.Errorf("FileName(%q) = %q, want %q", in, got, want)
		}
	}
	a, b := fileName("A/b"), fileName("a_b")
	if a == b || strings.ContainsAny(a, "/\\") || !strings.HasSuffix(a, ".json") {
		t.Errorf("FileName: %q and %q", a, b)
	}
	if got := fileName(".hidden"); strings.HasPrefix(got, ".") {
		t.Errorf("FileName(.hidden) = %q starts with a dot", got)
	}
}

func TestLibraryConcurrent(t *testing.T) {
	lib := NewLibrary(Options{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 200 {
				s := validSOP(strings.Repeat("x", w+1))
				s.Priority = i % 11
				if err := lib.Put(s); err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 {
					lib.Remove(s.Name)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				lib.Match("x xx xxx xxxx", 3, MatchOptions{})
				lib.List("")
			}
		}()
	}
	wg.Wait()
}

func TestZeroLibrary(t *testing.T) {
	var lib Library
	if ms := lib.Match("deploy", 0, MatchOptions{}); len(ms) != 0 || lib.Len() != 0 {
		t.Fatalf("empty zero library: %v", ms)
	}
	if err := lib.Remove("x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove on zero library = %v", err)
	}
	if err := lib.Add(validSOP("deploy")); err != nil {
		t.Fatal(err)
	}
	if ms := lib.Match("deploy it", 0, MatchOptions{}); len(ms) != 1 {
		t.Errorf("zero library after Add: %v", ms)
	}
}

func TestMaxFileSize(t *testing.T) {
	dir := filepath.Join("testdata", "load", "good")
	for _, tt := range []struct {
		name    string
		limit   int64
		tooBig  bool // every file is reported as larger than limit
		message string
	}{
		{"small limit", 100, true, "larger than 100"},
		{"zero is the default", 0, false, ""},
		{"negative is the default", -1, false, ""},
		{"large limit", defaultMaxFileSize, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lib, err := LoadDir(dir, Options{MaxFileSize: tt.limit, Strict: true})
			if !tt.tooBig {
				if err != nil || lib.Len() == 0 {
					t.Fatalf("LoadDir with MaxFileSize %d: %d procedures, error %v", tt.limit, lib.Len(), err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) || !strings.Contains(ve.Problem, tt.message) {
				t.Errorf("LoadDir with MaxFileSize %d: %v, want %q", tt.limit, err, tt.message)
			}
			if lib.Len() != 0 {
				t.Errorf("LoadDir with MaxFileSize %d loaded %v", tt.limit, names(lib.List("")))
			}
		})
	}
}
