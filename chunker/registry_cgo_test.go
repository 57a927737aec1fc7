//go:build cgo

package chunker

import (
	"sort"
	"testing"

	sitter "github.com/smacker/go-tree-sitter"
)

// TestRegistryGrammars checks each code language against its grammar: the grammar
// loads, and every node type and field its spec names exists in it (a misspelt node
// kind would otherwise never match, silently).
func TestRegistryGrammars(t *testing.T) {
	grammarsOnce.Do(loadGrammars)
	for _, l := range languages.sorted {
		if l.grammar == "" {
			continue
		}
		get := grammarConstructors[l.name]
		if get == nil || parserPools[l.name] == nil {
			t.Errorf("%s: grammar %s not loaded (run go test ./chunker/ -run TestGrammarTable -update)", l.name, l.grammar)
			continue
		}
		g := get()
		types, fields := grammarNames(g)
		s := &l.spec
		var named []string
		for _, m := range []map[string]bool{s.comments, s.attached, s.imports, s.neutral} {
			for k := range m {
				named = append(named, k)
			}
		}
		for k := range s.defs {
			named = append(named, k)
		}
		for k, f := range s.wrappers {
			named = append(named, k)
			if f != "" && !fields[f] {
				t.Errorf("%s: wrapper %s: %q is not a field of the grammar", l.name, k, f)
			}
		}
		sort.Strings(named)
		for _, k := range named {
			if !types[k] {
				t.Errorf("%s: %q is not a node type of the grammar", l.name, k)
			}
		}
	}
}

// grammarNames returns the named node types and the field names of a grammar.
func grammarNames(g *sitter.Language) (types, fields map[string]bool) {
	types, fields = map[string]bool{}, map[string]bool{}
	for i := uint32(0); i < g.SymbolCount(); i++ {
		if g.SymbolType(sitter.Symbol(i)) == sitter.SymbolTypeRegular {
			types[g.SymbolName(sitter.Symbol(i))] = true
		}
	}
	for i := 1; ; i++ {
		f := g.FieldName(i)
		if f == "" {
			break
		}
		fields[f] = true
	}
	return types, fields
}
