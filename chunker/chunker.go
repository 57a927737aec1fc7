// Package chunker splits source code and prose into retrieval-sized chunks.
//
// [Code] parses a file with tree-sitter (Go, Python, JavaScript, TypeScript/TSX, Java, Rust,
// C, C++, C#, Ruby) and applies the cAST algorithm: a syntax node whose size is over the
// budget is split at its children, recursively, and small adjacent siblings are merged while
// they fit. Sizes are counted in non-whitespace characters. Doc comments stay with the
// definition they precede, the pieces of a split definition never merge with its siblings,
// and each chunk is named after the (first) definition it holds, with its qualified name,
// enclosing definitions and doc ([CodeOptions.NoMergeDefinitions] gives every definition its
// own chunk instead). The chunks of a file tile it: concatenated in order they give back the
// file byte for byte, so nothing is ever lost. Files in languages without a grammar, and
// files whose parse tree has errors at the top level, fall back to line-based chunks cut at
// blank lines.
//
// [Text] chunks prose (markdown-aware: sections keep their heading path), and [Walk] chunks a
// whole tree, honouring .gitignore files.
//
// Builds without cgo have no tree-sitter: [Code] then always uses the line-based fallback.
package chunker

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Chunk kinds.
const (
	KindFunction  = "function"  // a free function
	KindMethod    = "method"    // a function inside a class, struct, impl or trait (or a Go method)
	KindClass     = "class"     // a class (or Ruby class)
	KindStruct    = "struct"    // a struct or union
	KindInterface = "interface" // an interface, or a Rust trait
	KindEnum      = "enum"      // an enum
	KindImpl      = "impl"      // a Rust impl block
	KindType      = "type"      // another type declaration (alias, typedef, record...)
	KindModule    = "module"    // a namespace or module block
	KindImport    = "import"    // an import block (with the package clause, if any)
	KindDocstring = "docstring" // the module docstring or package doc comment (with what follows it)
	KindCode      = "code"      // other top-level code
	KindLines     = "lines"     // a line-based chunk (no parse tree)
	KindText      = "text"      // prose
)

// DefaultBudget is the default chunk size in non-whitespace characters (about 40 lines of
// code, 300-400 tokens).
const DefaultBudget = 1500

// Chunk is one piece of a file.
type Chunk struct {
	// Path is the file path given to [Code] (empty for [Text]).
	Path string `json:"path,omitempty"`
	// Language is the language the file was chunked as ("text" when unknown).
	Language string `json:"language"`
	// Kind is one of the Kind constants.
	Kind string `json:"kind"`
	// Name is the definition's own name (function, method, type...), if any.
	Name string `json:"name,omitempty"`
	// QualifiedName is Parent.Name (for example "Stack.Push"), or Name at top level.
	QualifiedName string `json:"qualified_name,omitempty"`
	// Parent is the qualified name of the enclosing class, type or function.
	Parent string `json:"parent,omitempty"`
	// Signature is the first line of the definition (trimmed).
	Signature string `json:"signature,omitempty"`
	// Context holds the first line of each enclosing definition, outermost first.
	Context []string `json:"context,omitempty"`
	// Doc is the definition's doc comment or docstring, with comment markers removed.
	Doc string `json:"doc,omitempty"`
	// Defs lists the qualified names of the definitions the chunk holds whole, when it
	// holds more than one or is not named after the one it holds.
	Defs []string `json:"defs,omitempty"`
	// Part numbers the pieces (from 1) when a definition was larger than the budget and
	// was split over several chunks; 0 when the chunk holds the whole definition.
	Part int `json:"part,omitempty"`
	// Headings is the markdown heading path of a prose chunk, outermost first.
	Headings []string `json:"headings,omitempty"`
	// StartByte and EndByte delimit Content in the file (EndByte exclusive).
	StartByte int `json:"start_byte"`
	EndByte   int `json:"end_byte"`
	// StartLine and EndLine (1-based, inclusive) are the lines of the chunk's first and last
	// non-whitespace characters (of its first and last bytes when it is all whitespace).
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
	// Size is the number of non-whitespace characters in Content.
	Size int `json:"size"`
	// Content is the chunk's text: the file's bytes [StartByte, EndByte).
	Content string `json:"content,omitempty"`
}

// CodeOptions configure [Code]. The zero value is ready to use.
type CodeOptions struct {
	// Budget is the maximum chunk size in non-whitespace characters (default DefaultBudget).
	// Only a single line longer than the budget, cut at character boundaries, is the
	// exception: every chunk respects it.
	Budget int
	// Language overrides detection from the file extension (see [Languages]).
	Language string
	// DropWhitespaceGaps trims leading and trailing whitespace from each chunk and drops
	// chunks that are only whitespace; the chunks then no longer tile the file.
	DropWhitespaceGaps bool
	// NoTreeSitter forces the line-based fallback.
	NoTreeSitter bool
	// NoMergeDefinitions keeps every function, method and type in its own chunk. By
	// default (cAST) small adjacent definitions are packed together while they fit the
	// budget; the chunk is then named after its first definition and Defs lists them all.
	NoMergeDefinitions bool
}

func (o CodeOptions) budget() int {
	if o.Budget <= 0 {
		return DefaultBudget
	}
	return o.Budget
}

// checkText returns ErrBinary or ErrInvalidUTF8 (wrapped with path) when src cannot be
// chunked as text, nil otherwise.
func checkText(path string, src []byte) error {
	head := src
	if len(head) > 8000 {
		head = head[:8000]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return fmt.Errorf("%s: %w", path, ErrBinary)
	}
	if !utf8.Valid(src) {
		return fmt.Errorf("%s: %w", path, ErrInvalidUTF8)
	}
	return nil
}

// Code splits a source file into chunks. The language comes from the path's extension
// unless opts.Language names one; unknown languages, builds without cgo, and files whose
// parse tree has errors at the top level use line-based chunks. Binary content returns
// ErrBinary and invalid UTF-8 ErrInvalidUTF8. Unless opts.DropWhitespaceGaps is set, the
// chunks' contents concatenated in order equal src.
func Code(path string, src []byte, opts CodeOptions) ([]Chunk, error) {
	l := languages.byExt[strings.ToLower(filepath.Ext(path))]
	if opts.Language != "" {
		if l = languages.lookup(opts.Language); l == nil {
			return nil, fmt.Errorf("%q: %w", opts.Language, ErrUnknownLanguage)
		}
	}
	if err := checkText(path, src); err != nil {
		return nil, err
	}
	if len(src) == 0 {
		return nil, nil
	}
	nws := prefixNWS(src)
	budget := opts.budget()
	var spans []span
	switch {
	case l == nil:
	case l.proseSpans != nil:
		spans = l.proseSpans(src, nws, budget)
	case l.grammar != "" && !opts.NoTreeSitter && treeSitterAvailable:
		spans = treeSpans(l, src, nws, budget, !opts.NoMergeDefinitions)
	}
	if spans == nil {
		spans = fallbackSpans(src, nws, budget)
	}
	lang := "text"
	if l != nil {
		lang = l.name
	}
	return buildChunks(path, lang, src, nws, spans, opts.DropWhitespaceGaps), nil
}

// defInfo describes a definition (function, type...) found in the tree.
type defInfo struct {
	kind, name, qname, parent string
	sig, doc                  string
	context                   []string
	// innerStart/innerEnd delimit the definition node itself when the unit is a wrapper
	// (decorated_definition, export_statement, template_declaration).
	innerStart, innerEnd int
}

// span is a chunk under construction: a byte range and what it holds.
type span struct {
	start, end int
	def        *defInfo   // the definition this span is (a part of); nil at top level
	whole      bool       // the span holds the whole definition
	sealed     bool       // a piece of a split definition: never merged with siblings
	defs       []*defInfo // the definitions the span holds whole
	// flags for spans of top-level code
	hasDoc, hasImport, hasOther bool
	kind                        string // set for line-based and prose spans
	headings                    []string
}

func buildChunks(path, lang string, src []byte, nws []int32, spans []span, trim bool) []Chunk {
	ls := lineStarts(src)
	out := make([]Chunk, 0, len(spans))
	parts := map[*defInfo]int{}
	for _, s := range spans {
		if s.def != nil && !s.whole {
			parts[s.def]++
		}
	}
	seen := map[*defInfo]int{}
	for _, s := range spans {
		start, end := s.start, s.end
		if trim {
			for start < end && isSpace(src[start]) {
				start++
			}
			for end > start && isSpace(src[end-1]) {
				end--
			}
			if start == end {
				continue
			}
		}
		c := Chunk{
			Path:      path,
			Language:  lang,
			StartByte: start,
			EndByte:   end,
			Size:      int(nws[end] - nws[start]),
			Content:   string(src[start:end]),
			Headings:  s.headings,
		}
		c.StartLine, c.EndLine = lineRange(ls, src, start, end)
		if len(s.defs) > 1 || (len(s.defs) == 1 && s.def != s.defs[0]) {
			for _, x := range s.defs {
				c.Defs = append(c.Defs, x.qname)
			}
		}
		if d := s.def; d != nil {
			c.Kind, c.Name, c.QualifiedName, c.Parent = d.kind, d.name, d.qname, d.parent
			c.Signature, c.Doc, c.Context = d.sig, d.doc, d.context
			if !s.whole && parts[d] > 1 {
				seen[d]++
				c.Part = seen[d]
			}
		} else {
			c.Kind = s.topKind()
		}
		out = append(out, c)
	}
	return out
}

// lineRange returns the lines (1-based, inclusive) of the first and last non-whitespace
// characters of src[start:end], or of its first and last bytes when it is all whitespace.
func lineRange(ls []int, src []byte, start, end int) (first, last int) {
	fs, fe := start, end
	for fs < fe && isSpace(src[fs]) {
		fs++
	}
	for fe > fs && isSpace(src[fe-1]) {
		fe--
	}
	if fs == fe {
		fs, fe = start, end
	}
	first = lineOf(ls, fs)
	if fe > fs {
		return first, lineOf(ls, fe-1)
	}
	return first, first
}

// topKind is the kind of a span that is no definition (nor part of one).
func (s *span) topKind() string {
	switch {
	case s.kind != "":
		return s.kind
	case s.hasDoc:
		return KindDocstring
	case s.hasImport && !s.hasOther:
		return KindImport
	}
	return KindCode
}

// EmbeddingText returns the text to embed or index for the chunk: a short header (path,
// kind and qualified name, the enclosing definitions' first lines, the first line of the
// doc comment) followed by the content.
func (c Chunk) EmbeddingText() string {
	var b strings.Builder
	if c.Path != "" {
		b.WriteString("# ")
		b.WriteString(c.Path)
		b.WriteByte('\n')
	}
	if c.QualifiedName != "" || (c.Kind != "" && c.Kind != KindLines && c.Kind != KindText) {
		b.WriteString("# ")
		b.WriteString(c.Kind)
		if c.QualifiedName != "" {
			b.WriteByte(' ')
			b.WriteString(c.QualifiedName)
		}
		if c.Part > 0 {
			fmt.Fprintf(&b, " (part %d)", c.Part)
		}
		b.WriteByte('\n')
	}
	if len(c.Defs) > 0 {
		b.WriteString("# defines: ")
		b.WriteString(strings.Join(c.Defs, ", "))
		b.WriteByte('\n')
	}
	for _, h := range c.Context {
		b.WriteString("# in: ")
		b.WriteString(h)
		b.WriteByte('\n')
	}
	if c.Part > 1 && c.Signature != "" {
		b.WriteString("# in: ")
		b.WriteString(c.Signature)
		b.WriteByte('\n')
	}
	if len(c.Headings) > 0 {
		b.WriteString("# ")
		b.WriteString(strings.Join(c.Headings, " > "))
		b.WriteByte('\n')
	}
	if d := firstLine(c.Doc); d != "" {
		b.WriteString("# doc: ")
		b.WriteString(d)
		b.WriteByte('\n')
	}
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(strings.TrimSpace(c.Content))
	return b.String()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// prefixNWS returns p with p[i] = number of non-whitespace characters in src[:i].
func prefixNWS(src []byte) []int32 {
	p := make([]int32, len(src)+1)
	var n int32
	for i, b := range src {
		if !isSpace(b) && b&0xC0 != 0x80 {
			n++
		}
		p[i+1] = n
	}
	return p
}

func lineStarts(src []byte) []int {
	ls := []int{0}
	for i, b := range src {
		if b == '\n' {
			ls = append(ls, i+1)
		}
	}
	return ls
}

// lineOf returns the 1-based line of byte offset off.
func lineOf(ls []int, off int) int {
	lo, hi := 0, len(ls)
	for lo < hi {
		m := (lo + hi) / 2
		if ls[m] <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
