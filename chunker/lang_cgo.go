//go:build cgo

package chunker

import (
	"sync"

	sitter "github.com/smacker/go-tree-sitter"
)

// treeSitterAvailable reports whether this build parses with tree-sitter (cgo builds).
const treeSitterAvailable = true

var (
	grammarsOnce sync.Once
	// parserPools holds, by language name, parsers set to the language's grammar.
	parserPools map[string]*sync.Pool
)

// loadGrammars makes a parser pool for each registered language whose grammar
// grammars_cgo.go imports.
func loadGrammars() {
	parserPools = make(map[string]*sync.Pool, len(grammarConstructors))
	for _, l := range languages.sorted {
		get := grammarConstructors[l.name]
		if l.grammar == "" || get == nil {
			continue
		}
		g := get()
		parserPools[l.name] = &sync.Pool{New: func() any {
			p := sitter.NewParser()
			p.SetLanguage(g)
			return p
		}}
	}
}
