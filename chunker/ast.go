//go:build cgo

package chunker

import (
	"context"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

// tinySize is the size (non-whitespace characters) of a piece that always joins a
// neighbour when the sum fits: a closing brace, "end", a semicolon.
const tinySize = 3

// treeSpans chunks src with tree-sitter; nil means "use the fallback".
func treeSpans(l *language, src []byte, nws []int32, budget int, mergeDefs bool) []span {
	grammarsOnce.Do(loadGrammars)
	pool := parserPools[l.name]
	if pool == nil {
		return nil
	}
	p := pool.Get().(*sitter.Parser)
	// Pathological input can make a GLR parse slow: give up (and fall back to lines) after
	// 5 s plus 1 s per 100 kB.
	p.SetOperationLimit(5_000_000 + len(src)*10)
	tree, err := p.ParseCtx(context.Background(), nil, src)
	if err != nil || tree == nil {
		p.Reset()
		pool.Put(p)
		return nil
	}
	defer pool.Put(p)
	defer tree.Close()
	root := tree.RootNode()
	if root == nil || root.IsError() {
		return nil
	}
	kids := children(root)
	for _, k := range kids {
		if k.IsError() {
			return nil
		}
	}
	a := &astChunker{src: src, nws: nws, budget: budget, spec: &l.spec, mergeDefs: mergeDefs}
	spans := a.split(kids, 0, len(src), nil, nil, true)
	// The spans must tile the file; anything else is a bug we must not leak.
	pos := 0
	for _, s := range spans {
		if s.start != pos || s.end <= s.start {
			return nil
		}
		pos = s.end
	}
	if pos != len(src) {
		return nil
	}
	return spans
}

type astChunker struct {
	src    []byte
	nws    []int32
	budget int
	spec   *langSpec
	// mergeDefs lets whole definitions merge with their siblings (cAST); otherwise each
	// definition keeps its own chunk.
	mergeDefs bool
}

func (a *astChunker) size(lo, hi int) int { return int(a.nws[hi] - a.nws[lo]) }

// unit is a node with the comments (and attributes) attached before it and the trailing
// comments on its last line, or a block of comments on its own.
type unit struct {
	lo, hi int
	lead   []*sitter.Node // attached comments and attributes before main
	main   *sitter.Node   // nil for a block of comments
	nodes  []*sitter.Node // everything, in order
}

type flags struct{ doc, imp, other bool }

func children(n *sitter.Node) []*sitter.Node {
	c := int(n.ChildCount())
	out := make([]*sitter.Node, 0, c)
	for i := 0; i < c; i++ {
		if k := n.Child(i); k != nil {
			out = append(out, k)
		}
	}
	return out
}

func (a *astChunker) hasBlankLine(lo, hi int) bool {
	nl := 0
	for i := lo; i < hi; i++ {
		switch a.src[i] {
		case '\n':
			nl++
			if nl >= 2 {
				return true
			}
		case ' ', '\t', '\r', '\f', '\v':
		default:
			nl = 0
		}
	}
	return false
}

func (a *astChunker) hasNewline(lo, hi int) bool {
	for i := lo; i < hi; i++ {
		if a.src[i] == '\n' {
			return true
		}
	}
	return false
}

// units groups nodes (ordered, within [lo, hi)) into units and sets their byte ranges so
// that they tile [lo, hi): the gap between two units goes to the first up to and including
// its first newline, the rest to the second.
func (a *astChunker) units(nodes []*sitter.Node, lo, hi int) []unit {
	us := a.group(nodes, lo, hi)
	if len(us) == 0 {
		return nil
	}
	a.cutGaps(us, lo, hi)
	return retile(us, lo, hi)
}

// group groups nodes (ordered, within [lo, hi)) into units: comments and attributes
// attach to the node that follows them (unless a blank line parts them), a comment on the
// line where the previous node ends trails that node, and comments attached to nothing
// form units of their own. Empty nodes and newline terminators are left to the gaps.
func (a *astChunker) group(nodes []*sitter.Node, lo, hi int) []unit {
	var us []unit
	var pending []*sitter.Node // comments and attributes waiting for a node
	pendingEnd := 0            // where the last pending one ends (clipped)
	prevEnd := lo
	flush := func() {
		if len(pending) > 0 {
			us = append(us, unit{nodes: pending})
			pending = nil
		}
	}
	for _, n := range nodes {
		s, e := int(n.StartByte()), int(n.EndByte())
		if s < prevEnd {
			s = prevEnd
		}
		if e > hi {
			e = hi
		}
		if e <= s || a.size(s, e) == 0 {
			continue // empty, or a newline terminator: part of the gap
		}
		prevEnd = e
		t := n.Type()
		if a.spec.comments[t] || a.spec.attached[t] {
			if a.spec.comments[t] && len(pending) == 0 && len(us) > 0 && !a.hasNewline(lastEnd(us), s) {
				// a trailing comment on the line of the previous node
				u := &us[len(us)-1]
				u.nodes = append(u.nodes, n)
				continue
			}
			if len(pending) > 0 && a.hasBlankLine(pendingEnd, s) {
				flush()
			}
			pending = append(pending, n)
			pendingEnd = e
			continue
		}
		if len(pending) > 0 && a.hasBlankLine(pendingEnd, s) {
			flush()
		}
		u := unit{main: n, lead: pending}
		u.nodes = append(append([]*sitter.Node(nil), pending...), n)
		pending = nil
		us = append(us, u)
	}
	flush()
	return us
}

// lastEnd is where the last node of the last unit ends.
func lastEnd(us []unit) int {
	u := us[len(us)-1]
	return int(u.nodes[len(u.nodes)-1].EndByte())
}

// cutGaps sets the byte ranges of units so that they tile [lo, hi): the gap between two
// units goes to the first up to and including its first newline, the rest to the second.
func (a *astChunker) cutGaps(us []unit, lo, hi int) {
	prev := lo
	for i := range us {
		first := int(us[i].nodes[0].StartByte())
		if first < prev {
			first = prev
		}
		if i == 0 {
			us[i].lo = lo
			continue
		}
		pe := int(us[i-1].nodes[len(us[i-1].nodes)-1].EndByte())
		if pe < us[i-1].lo {
			pe = us[i-1].lo
		}
		if pe > first {
			pe = first
		}
		cut := first
		for j := pe; j < first; j++ {
			if a.src[j] == '\n' {
				cut = j + 1
				break
			}
		}
		if cut < us[i-1].lo {
			cut = us[i-1].lo
		}
		us[i].lo = cut
		us[i-1].hi = cut
		prev = cut
	}
	us[len(us)-1].hi = hi
}

// retile drops empty units (possible only with overlapping nodes) and folds their bytes
// forward, so that the units still tile [lo, hi).
func retile(us []unit, lo, hi int) []unit {
	out := us[:0]
	for _, u := range us {
		if u.hi <= u.lo {
			continue
		}
		out = append(out, u)
	}
	if len(out) > 0 {
		out[0].lo = lo
		for i := 1; i < len(out); i++ {
			out[i].lo = out[i-1].hi
		}
		out[len(out)-1].hi = hi
	}
	return out
}

// split chunks the nodes covering [lo, hi), all inside definition cur (nil at top level).
// force, when set, gives the flags of every top-level piece (the pieces of a big import).
func (a *astChunker) split(nodes []*sitter.Node, lo, hi int, cur *defInfo, force *flags, top bool) []span {
	us := a.units(nodes, lo, hi)
	if len(us) == 0 {
		return a.lineSpans(lo, hi, cur, force)
	}
	var out []span
	for i, u := range us {
		var d *defInfo
		if u.main != nil {
			d = a.defOf(u, cur)
		}
		if a.size(u.lo, u.hi) <= a.budget && (d != nil || cur == nil || !a.holdsDef(u.main)) {
			if d != nil {
				out = append(out, span{start: u.lo, end: u.hi, def: d, whole: true, defs: []*defInfo{d}})
			} else {
				s := span{start: u.lo, end: u.hi, def: cur}
				if cur == nil {
					f := a.flagsOf(u, top && i == a.firstStatement(us))
					if force != nil {
						f = *force
					}
					s.hasDoc, s.hasImport, s.hasOther = f.doc, f.imp, f.other
				}
				out = append(out, s)
			}
			continue
		}
		owner := cur
		var sub *flags
		if d != nil {
			owner = d
		} else if cur == nil {
			f := a.flagsOf(u, false)
			if force != nil {
				f = *force
			}
			sub = &f
		}
		var kids []*sitter.Node
		if u.main != nil && u.main.ChildCount() > 0 {
			kids = append(append(kids, u.lead...), children(u.main)...)
			kids = append(kids, u.nodes[len(u.lead)+1:]...)
		}
		if len(kids) == 0 {
			out = append(out, a.lineSpans(u.lo, u.hi, owner, sub)...)
			continue
		}
		pieces := a.split(kids, u.lo, u.hi, owner, sub, false)
		if d != nil {
			// the pieces of a split definition never merge with its siblings
			for i := range pieces {
				pieces[i].sealed = true
			}
		}
		out = append(out, pieces...)
	}
	return a.merge(out, cur)
}

// holdsDef reports whether a node that is not a definition (a class body) has definitions
// among its children: inside a definition being split, such a node is split further so
// that its methods get their own names even when the body would fit.
func (a *astChunker) holdsDef(n *sitter.Node) bool {
	if n == nil {
		return false
	}
	c := int(n.NamedChildCount())
	for i := 0; i < c; i++ {
		k := n.NamedChild(i)
		if k == nil {
			continue
		}
		t := k.Type()
		if _, wrapper := a.spec.wrappers[t]; wrapper || a.spec.defs[t] != "" {
			return true
		}
	}
	return false
}

// firstStatement returns the index of the first unit with a main node.
func (a *astChunker) firstStatement(us []unit) int {
	for i, u := range us {
		if u.main != nil {
			return i
		}
	}
	return -1
}

func (a *astChunker) lineSpans(lo, hi int, owner *defInfo, f *flags) []span {
	var out []span
	for _, r := range lineSplit(a.src, a.nws, lo, hi, a.budget) {
		s := span{start: r[0], end: r[1], def: owner}
		if owner == nil {
			if f != nil {
				s.hasDoc, s.hasImport, s.hasOther = f.doc, f.imp, f.other
			} else {
				s.hasOther = true
			}
		}
		out = append(out, s)
	}
	return out
}

// flagsOf classifies a top-level unit that is not a definition.
func (a *astChunker) flagsOf(u unit, first bool) flags {
	if u.main == nil {
		return flags{}
	}
	t := u.main.Type()
	switch {
	case a.spec.imports[t]:
		return flags{imp: true}
	case a.spec.neutral[t]:
		// a package clause with a comment before it is the package doc
		for _, l := range u.lead {
			if a.spec.comments[l.Type()] {
				return flags{doc: true}
			}
		}
		return flags{}
	case first && a.spec.docstrings && a.docstringNode(u.main) != nil:
		return flags{doc: true}
	}
	return flags{other: true}
}

// merge joins adjacent spans while they fit the budget. Own pieces of cur merge; whole
// definitions merge too when mergeDefs is set; pieces of a split definition (sealed) stay
// apart, except that a tiny piece (a closing brace) joins its neighbour.
func (a *astChunker) merge(in []span, cur *defInfo) []span {
	mergeable := func(x *span) bool {
		return !x.sealed && (x.def == cur || (a.mergeDefs && x.whole))
	}
	out := make([]span, 0, len(in))
	for _, s := range in {
		if n := len(out); n > 0 {
			p := &out[n-1]
			if a.size(p.start, s.end) <= a.budget {
				switch {
				case mergeable(p) && mergeable(&s):
					if p.def == cur && cur == nil && len(p.defs) == 0 && s.whole && !p.hasDoc {
						// top-level code before a definition: the definition names the chunk
						// (the module docstring keeps naming its chunk)
						p.def, p.whole = s.def, true
					}
					p.end = s.end
					p.defs = append(p.defs, s.defs...)
					p.hasDoc = p.hasDoc || s.hasDoc
					p.hasImport = p.hasImport || s.hasImport
					p.hasOther = p.hasOther || s.hasOther
					continue
				case s.def == cur && !s.sealed && a.size(s.start, s.end) <= tinySize:
					p.end = s.end
					continue
				case p.def == cur && !p.sealed && a.size(p.start, p.end) <= tinySize && !p.hasDoc:
					s.start = p.start
					*p = s
					continue
				}
			}
		}
		out = append(out, s)
	}
	return out
}

// defOf returns the definition a unit's main node is, or nil. cur is the definition
// being split (nil at top level).
func (a *astChunker) defOf(u unit, cur *defInfo) *defInfo {
	n := u.main
	if !n.IsNamed() {
		return nil // a keyword token ("class", "module")
	}
	if cur != nil && int(n.StartByte()) == cur.innerStart && int(n.EndByte()) == cur.innerEnd {
		return nil // the definition being split, seen through its wrapper
	}
	inner := a.unwrap(n)
	if inner == nil {
		return nil
	}
	kind, name := a.classify(inner)
	if kind == "" {
		return nil
	}
	d := &defInfo{kind: kind, name: name, innerStart: int(inner.StartByte()), innerEnd: int(inner.EndByte())}
	if d.name == "" {
		d.name = a.nameOf(inner)
	}
	nest(d, cur)
	if a.spec.refine != nil {
		if a.spec.refine(a.node(inner), d); d.kind == "" {
			return nil
		}
	}
	d.qname = d.name
	if d.parent != "" && d.name != "" {
		d.qname = d.parent + "." + d.name
	}
	d.sig = a.signature(inner)
	d.doc = a.docOf(u, inner)
	return d
}

// unwrap returns the node a wrapper (decorator, export, template) holds, through up to
// four more wrappers, or n itself when n is no wrapper; nil when a wrapper holds nothing.
func (a *astChunker) unwrap(n *sitter.Node) *sitter.Node {
	if _, ok := a.spec.wrappers[n.Type()]; !ok {
		return n
	}
	inner := a.wrapped(n)
	for depth := 0; inner != nil && depth < 4; depth++ {
		if _, ok := a.spec.wrappers[inner.Type()]; !ok {
			break
		}
		inner = a.wrapped(inner)
	}
	return inner
}

// wrapped returns what wrapper w holds: its child named by the wrapper's field or, with
// field "", its last named child that is a definition; nil when there is none.
func (a *astChunker) wrapped(w *sitter.Node) *sitter.Node {
	if field := a.spec.wrappers[w.Type()]; field != "" {
		return w.ChildByFieldName(field)
	}
	ks := children(w)
	for i := len(ks) - 1; i >= 0; i-- {
		if ks[i].IsNamed() && a.spec.defs[ks[i].Type()] != "" {
			return ks[i]
		}
	}
	return nil
}

// classify returns the kind of definition node n is, from the language's defs or else its
// declares hook, with the name the hook found; kind "" when n is no definition.
func (a *astChunker) classify(n *sitter.Node) (kind, name string) {
	if kind = a.spec.defs[n.Type()]; kind != "" || a.spec.declares == nil {
		return kind, ""
	}
	return a.spec.declares(a.node(n))
}

// classLike kinds turn the functions they hold into methods.
var classLike = map[string]bool{
	KindClass: true, KindStruct: true, KindInterface: true, KindEnum: true, KindImpl: true,
	KindType: true,
}

// nest places definition d inside cur (nil at top level): cur becomes its parent and
// context, and a function in a class-like definition is a method.
func nest(d, cur *defInfo) {
	if cur == nil {
		return
	}
	d.parent = cur.qname
	d.context = append(append([]string(nil), cur.context...), cur.sig)
	if d.kind == KindFunction && classLike[cur.kind] {
		d.kind = KindMethod
	}
}

// treeNode is a parse-tree node as the language hooks see it (see [syntaxNode]).
type treeNode struct {
	a *astChunker
	n *sitter.Node
}

// node wraps n for the language hooks; nil stays nil.
func (a *astChunker) node(n *sitter.Node) syntaxNode {
	if n == nil {
		return nil
	}
	return treeNode{a: a, n: n}
}

func (t treeNode) Type() string                 { return t.n.Type() }
func (t treeNode) Field(name string) syntaxNode { return t.a.node(t.n.ChildByFieldName(name)) }
func (t treeNode) FirstNamed(typ string) syntaxNode {
	return t.a.node(firstNamedOfType(t.n, typ))
}
func (t treeNode) Text() string     { return t.a.text(t.n) }
func (t treeNode) Name() string     { return t.a.nameOf(t.n) }
func (t treeNode) DeclName() string { return t.a.declName(t.n) }
func (t treeNode) DefKind() string  { return t.a.spec.defs[t.n.Type()] }

func firstNamedOfType(n *sitter.Node, t string) *sitter.Node {
	c := int(n.NamedChildCount())
	for i := 0; i < c; i++ {
		if k := n.NamedChild(i); k != nil && k.Type() == t {
			return k
		}
	}
	return nil
}

// text returns a node's text on one line, capped.
func (a *astChunker) text(n *sitter.Node) string {
	s, e := int(n.StartByte()), int(n.EndByte())
	if s < 0 || e > len(a.src) || e < s {
		return ""
	}
	return capBytes(strings.Join(strings.Fields(string(a.src[s:e])), " "), 120)
}

// capBytes cuts s to at most n bytes when it is longer, then drops the character the cut
// may have split (or, cut at a boundary, the last character).
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xC0 {
		s = s[:len(s)-1]
	}
	return s
}

func (a *astChunker) nameOf(n *sitter.Node) string {
	if nn := n.ChildByFieldName("name"); nn != nil {
		return a.text(nn)
	}
	if dd := n.ChildByFieldName("declarator"); dd != nil {
		return a.declName(dd)
	}
	return ""
}

// declName digs the declared name out of a C/C++ declarator.
func (a *astChunker) declName(d *sitter.Node) string {
	for depth := 0; d != nil && depth < 16; depth++ {
		switch d.Type() {
		case "identifier", "field_identifier", "type_identifier", "qualified_identifier",
			"destructor_name", "operator_name", "primitive_type", "template_function":
			return a.text(d)
		}
		if n := d.ChildByFieldName("declarator"); n != nil {
			d = n
			continue
		}
		if n := d.ChildByFieldName("name"); n != nil {
			d = n
			continue
		}
		if d.NamedChildCount() == 0 {
			return ""
		}
		d = d.NamedChild(0)
	}
	return ""
}

// signature returns the first line of a node's text, trimmed and capped.
func (a *astChunker) signature(n *sitter.Node) string {
	s, e := int(n.StartByte()), int(n.EndByte())
	if e > len(a.src) || s >= e {
		return ""
	}
	line := a.src[s:e]
	for i, b := range line {
		if b == '\n' {
			line = line[:i]
			break
		}
	}
	return capBytes(strings.TrimSpace(string(line)), 200)
}

// docstringNode returns the string node of a statement that is a bare string literal.
func (a *astChunker) docstringNode(stmt *sitter.Node) *sitter.Node {
	if stmt == nil || stmt.Type() != "expression_statement" || stmt.NamedChildCount() != 1 {
		return nil
	}
	s := stmt.NamedChild(0)
	if s != nil && (s.Type() == "string" || s.Type() == "concatenated_string") {
		return s
	}
	return nil
}

// docOf returns the doc comment before a definition, or its docstring.
func (a *astChunker) docOf(u unit, inner *sitter.Node) string {
	var parts []string
	for _, l := range u.lead {
		if a.spec.comments[l.Type()] {
			parts = append(parts, string(a.src[l.StartByte():l.EndByte()]))
		}
	}
	if len(parts) > 0 {
		return cleanComment(strings.Join(parts, "\n"))
	}
	if a.spec.docstrings {
		if body := inner.ChildByFieldName("body"); body != nil && body.NamedChildCount() > 0 {
			if s := a.docstringNode(body.NamedChild(0)); s != nil {
				return cleanDocstring(string(a.src[s.StartByte():s.EndByte()]))
			}
		}
	}
	return ""
}
