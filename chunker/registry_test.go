package chunker

import (
	"bytes"
	"fmt"
	"go/format"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestRegistry checks the invariants of the registered languages: each is either a code
// language with a grammar and node kinds or a prose language with neither, its names and
// extensions are well formed and its own, and the lookups derived from the registry
// answer for every one of them.
func TestRegistry(t *testing.T) {
	want := []string{"c", "cpp", "csharp", "go", "java", "javascript", "markdown", "python",
		"ruby", "rust", "text", "tsx", "typescript"}
	if got := Languages(); !reflect.DeepEqual(got, want) {
		t.Errorf("Languages() = %v, want %v", got, want)
	}
	if !sort.StringsAreSorted(Languages()) {
		t.Errorf("Languages() not sorted: %v", Languages())
	}
	exts, names := map[string]string{}, map[string]string{}
	for _, l := range languages.sorted {
		if l.prose {
			if l.grammar != "" || len(l.spec.defs) > 0 || l.spec.declares != nil || l.spec.refine != nil {
				t.Errorf("%s: a prose language with a grammar or node kinds", l.name)
			}
		} else {
			if l.grammar == "" {
				t.Errorf("%s: code language without a grammar", l.name)
			}
			if len(l.spec.defs) == 0 || len(l.spec.comments) == 0 {
				t.Errorf("%s: no definition or comment node kinds", l.name)
			}
			for k, kind := range l.spec.defs {
				if !validKinds[kind] {
					t.Errorf("%s: node kind %q maps to unknown chunk kind %q", l.name, k, kind)
				}
			}
		}
		for _, e := range l.extensions {
			if o, dup := exts[e]; dup {
				t.Errorf("extension %s registered by %s and %s", e, o, l.name)
			}
			exts[e] = l.name
			if got := LanguageOf("dir/file" + strings.ToUpper(e)); got != l.name {
				t.Errorf("LanguageOf(file%s) = %q, want %q", strings.ToUpper(e), got, l.name)
			}
		}
		for _, a := range append([]string{l.name}, l.aliases...) {
			if o, dup := names[a]; dup {
				t.Errorf("name %s registered by %s and %s", a, o, l.name)
			}
			names[a] = l.name
			cs, err := Code("x", []byte("x\n"), CodeOptions{Language: strings.ToUpper(a)})
			if err != nil || len(cs) != 1 || cs[0].Language != l.name {
				t.Errorf("Code(Language: %q) = %+v, %v; want one chunk in %s", strings.ToUpper(a), cs, err, l.name)
			}
		}
	}
	if len(exts) != len(languages.byExt) || len(names) != len(languages.byName) {
		t.Errorf("indexes hold %d extensions and %d names, languages %d and %d",
			len(languages.byExt), len(languages.byName), len(exts), len(names))
	}
	if got := LanguageOf("notes.txt"); got != "" {
		t.Errorf("LanguageOf(notes.txt) = %q, want \"\"", got)
	}
}

var validKinds = map[string]bool{
	KindFunction: true, KindMethod: true, KindClass: true, KindStruct: true, KindInterface: true,
	KindEnum: true, KindImpl: true, KindType: true, KindModule: true,
}

// TestRegisterPanics checks that a malformed or duplicate registration (a programming
// error) panics at init with a message naming the clash.
func TestRegisterPanics(t *testing.T) {
	goLang := language{name: "go", extensions: []string{".go"}, aliases: []string{"golang"}, grammar: "g/go"}
	tests := []struct {
		name string
		l    language
		want string
	}{
		{"duplicate name", language{name: "go", grammar: "g/other"}, `name "go" already registered by language "go"`},
		{"alias clashes with a name", language{name: "gopher", aliases: []string{"go"}, grammar: "g/x"}, `name "go" already registered by language "go"`},
		{"name clashes with an alias", language{name: "golang", grammar: "g/x"}, `name "golang" already registered by language "go"`},
		{"duplicate extension", language{name: "other", extensions: []string{".go"}, grammar: "g/x"}, `extension ".go" already registered by language "go"`},
		{"extension without dot", language{name: "other", extensions: []string{"go2"}, grammar: "g/x"}, `extension "go2"`},
		{"upper-case extension", language{name: "other", extensions: []string{".GO2"}, grammar: "g/x"}, `extension ".GO2"`},
		{"upper-case alias", language{name: "other", aliases: []string{"Other"}, grammar: "g/x"}, `alias "Other"`},
		{"bad name", language{name: "C#", grammar: "g/x"}, `language name "C#"`},
		{"neither code nor prose", language{name: "other"}, `either a grammar`},
		{"both code and prose", language{name: "other", grammar: "g/x", prose: true}, `either a grammar`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry()
			r.add(goLang)
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, "chunker: ") {
					t.Errorf("panic %q, want one containing %q", msg, tc.want)
				}
			}()
			r.add(tc.l)
		})
	}
	r := newRegistry()
	r.add(language{name: "zz", prose: true})
	r.add(goLang)
	r.add(language{name: "c", extensions: []string{".c"}, grammar: "g/c"})
	var got []string
	for _, l := range r.sorted {
		got = append(got, l.name)
	}
	if !reflect.DeepEqual(got, []string{"c", "go", "zz"}) {
		t.Errorf("registry order %v, want sorted by name", got)
	}
	if r.lookup("GoLang") == nil || r.lookup("golang").name != "go" || r.lookup("rust") != nil {
		t.Errorf("lookup by alias failed")
	}
}

// TestGrammarTable checks that grammars_cgo.go imports exactly the grammars the registered
// languages name; with -update it rewrites the file from the registry.
func TestGrammarTable(t *testing.T) {
	want, err := renderGrammarTable(languages.sorted)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "grammars_cgo.go", want, "TestGrammarTable")
}

// renderGrammarTable returns grammars_cgo.go for the languages ls.
func renderGrammarTable(ls []*language) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`// Code generated by TestGrammarTable from the registered languages; DO NOT EDIT.
// After adding a language or changing its grammar, run:
//	go test ./chunker/ -run TestGrammarTable -update

//go:build cgo

package chunker

import (
	sitter "github.com/smacker/go-tree-sitter"

`)
	alias := func(l *language) string { return "grammar" + strings.ToUpper(l.name[:1]) + l.name[1:] }
	for _, l := range ls {
		if l.grammar != "" {
			fmt.Fprintf(&b, "\t%s %q\n", alias(l), l.grammar)
		}
	}
	b.WriteString(")\n\n// grammarConstructors returns each code language's tree-sitter grammar, by language name.\n")
	b.WriteString("var grammarConstructors = map[string]func() *sitter.Language{\n")
	for _, l := range ls {
		if l.grammar != "" {
			fmt.Fprintf(&b, "\t%q: %s.GetLanguage,\n", l.name, alias(l))
		}
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
