package chunker

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// language is everything the chunker knows about one language. Each lang_*.go file
// registers its language(s) in init with [register]; nothing else in the package lists
// languages: [Languages], [LanguageOf], the CodeOptions.Language spellings and the
// tree-sitter grammar table (grammars_cgo.go, generated from the registry) all derive
// from it.
type language struct {
	// name is the canonical name: CodeOptions.Language and Chunk.Language. Lower-case
	// letters and digits only.
	name string
	// extensions are the file extensions [LanguageOf] maps to name: lower case, with the
	// leading dot.
	extensions []string
	// aliases are other accepted spellings of name in CodeOptions.Language (lower case).
	aliases []string
	// grammar is the import path of a code language's tree-sitter grammar package, one
	// that exports GetLanguage() *sitter.Language ("" for prose). The cgo build imports it
	// through grammars_cgo.go: after adding or changing one, run
	// go test ./chunker/ -run TestGrammarTable -update.
	grammar string
	// spec tells the tree chunker how to read the grammar's tree (code languages).
	spec langSpec
	// prose marks a language chunked without a grammar: by proseSpans when set, else by
	// lines.
	prose      bool
	proseSpans func(src []byte, nws []int32, budget int) []span
}

// registry holds the registered languages and the indexes derived from them.
type registry struct {
	byName map[string]*language // canonical names and aliases
	byExt  map[string]*language
	sorted []*language // by name
}

func newRegistry() *registry {
	return &registry{byName: map[string]*language{}, byExt: map[string]*language{}}
}

// languages is the package's registry, filled by the init functions of the lang_*.go files.
var languages = newRegistry()

// register adds a language to the package's registry. It panics on a programming error:
// a malformed name, extension or alias, or one another language already claims.
func register(l language) { languages.add(l) }

// add adds l, or panics saying what is wrong with it.
func (r *registry) add(l language) {
	if !isLanguageName(l.name) {
		panic(fmt.Sprintf("chunker: language name %q: want lower-case letters and digits", l.name))
	}
	if l.prose == (l.grammar != "") {
		panic(fmt.Sprintf("chunker: language %q: want either a grammar (code) or prose, not both or neither", l.name))
	}
	p := &l
	for _, k := range append([]string{l.name}, l.aliases...) {
		if k == "" || k != strings.ToLower(k) {
			panic(fmt.Sprintf("chunker: language %q: alias %q: want a non-empty lower-case name", l.name, k))
		}
		if o := r.byName[k]; o != nil {
			panic(fmt.Sprintf("chunker: language %q: name %q already registered by language %q", l.name, k, o.name))
		}
		r.byName[k] = p
	}
	for _, e := range l.extensions {
		if len(e) < 2 || e[0] != '.' || e != strings.ToLower(e) {
			panic(fmt.Sprintf("chunker: language %q: extension %q: want a lower-case extension with its dot", l.name, e))
		}
		if o := r.byExt[e]; o != nil {
			panic(fmt.Sprintf("chunker: language %q: extension %q already registered by language %q", l.name, e, o.name))
		}
		r.byExt[e] = p
	}
	i := sort.Search(len(r.sorted), func(i int) bool { return r.sorted[i].name >= l.name })
	r.sorted = append(r.sorted, nil)
	copy(r.sorted[i+1:], r.sorted[i:])
	r.sorted[i] = p
}

func isLanguageName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// lookup returns the language a name or alias (any case) stands for, or nil.
func (r *registry) lookup(name string) *language { return r.byName[strings.ToLower(name)] }

// Languages lists the canonical language names [Code] accepts in CodeOptions.Language,
// sorted.
func Languages() []string {
	out := make([]string, len(languages.sorted))
	for i, l := range languages.sorted {
		out[i] = l.name
	}
	return out
}

// LanguageOf returns the language of a path from its extension, or "" when unknown.
func LanguageOf(path string) string {
	if l := languages.byExt[strings.ToLower(filepath.Ext(path))]; l != nil {
		return l.name
	}
	return ""
}
