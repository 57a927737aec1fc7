package chunker

// langSpec tells the chunker how to read one grammar's tree.
type langSpec struct {
	// comments are the node types of comments (they attach to the node they precede).
	comments map[string]bool
	// attached are other node types that attach to the next node (Rust attributes).
	attached map[string]bool
	// imports are import statements; neutral nodes (package clause) keep a chunk "import".
	imports, neutral map[string]bool
	// defs maps definition node types to kinds.
	defs map[string]string
	// wrappers are nodes holding one definition (decorators, export, template): the child
	// named by the field (or, with field "", the last named child that is a definition).
	wrappers map[string]string
	// docstrings: the first statement of a body (or module) that is a string is a docstring.
	docstrings bool
	// declares, when set, recognises a definition whose node type is not in defs (a
	// JavaScript const bound to an arrow function): it returns the kind ("" when n is not
	// a definition) and the name ("" for the usual lookup, [syntaxNode.Name]).
	declares func(n syntaxNode) (kind, name string)
	// refine, when set, adjusts a definition once the generic rules have named and nested
	// it (a Go method's receiver as parent, a typedef's name); setting d.kind to "" says n
	// is not a definition after all.
	refine func(n syntaxNode, d *defInfo)
}

// syntaxNode is the view of a parse-tree node that the language hooks (langSpec.declares
// and refine) get; it needs no cgo, so the language files build everywhere.
type syntaxNode interface {
	// Type is the node type ("function_declaration").
	Type() string
	// Field returns the child with the field name, or nil.
	Field(name string) syntaxNode
	// FirstNamed returns the first named child of type t, or nil.
	FirstNamed(t string) syntaxNode
	// Text is the node's text on one line, capped.
	Text() string
	// Name is the usual name lookup: the name field, else the name in the declarator field.
	Name() string
	// DeclName digs the declared name out of a C/C++ declarator.
	DeclName() string
	// DefKind is the kind the language's defs give the node's type ("" when none).
	DefKind() string
}

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}
