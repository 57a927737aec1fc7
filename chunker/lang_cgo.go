//go:build cgo

package chunker

import (
	"sync"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/c"
	"github.com/smacker/go-tree-sitter/cpp"
	"github.com/smacker/go-tree-sitter/csharp"
	"github.com/smacker/go-tree-sitter/golang"
	"github.com/smacker/go-tree-sitter/java"
	"github.com/smacker/go-tree-sitter/javascript"
	"github.com/smacker/go-tree-sitter/python"
	"github.com/smacker/go-tree-sitter/ruby"
	"github.com/smacker/go-tree-sitter/rust"
	"github.com/smacker/go-tree-sitter/typescript/tsx"
	"github.com/smacker/go-tree-sitter/typescript/typescript"
)

// treeSitterAvailable reports whether this build parses with tree-sitter (cgo builds).
const treeSitterAvailable = true

var (
	grammarsOnce sync.Once
	grammars     map[string]*sitter.Language
	parserPools  map[string]*sync.Pool
)

func loadGrammars() {
	grammars = map[string]*sitter.Language{
		"go":         golang.GetLanguage(),
		"python":     python.GetLanguage(),
		"javascript": javascript.GetLanguage(),
		"typescript": typescript.GetLanguage(),
		"tsx":        tsx.GetLanguage(),
		"java":       java.GetLanguage(),
		"rust":       rust.GetLanguage(),
		"c":          c.GetLanguage(),
		"cpp":        cpp.GetLanguage(),
		"csharp":     csharp.GetLanguage(),
		"ruby":       ruby.GetLanguage(),
	}
	parserPools = make(map[string]*sync.Pool, len(grammars))
	for name, lang := range grammars {
		parserPools[name] = &sync.Pool{New: func() any {
			p := sitter.NewParser()
			p.SetLanguage(lang)
			return p
		}}
	}
}
