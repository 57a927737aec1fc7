package chunker

import "strings"

func init() {
	register(language{
		name:       "c",
		extensions: []string{".c", ".h"},
		grammar:    "github.com/smacker/go-tree-sitter/c",
		spec: langSpec{
			comments: set("comment"),
			imports:  set("preproc_include"),
			defs: map[string]string{
				"function_definition": KindFunction,
				"struct_specifier":    KindStruct,
				"union_specifier":     KindStruct,
				"enum_specifier":      KindEnum,
				"type_definition":     KindType,
			},
			declares: declaresC,
			refine:   refineC,
		},
	})
}

// declaresC recognises a declaration that defines a type (`struct foo { ... };`). C++
// (lang_cpp.go) shares it.
func declaresC(n syntaxNode) (kind, name string) {
	if n.Type() != "declaration" {
		return "", ""
	}
	ty := n.Field("type")
	if ty == nil || ty.Field("body") == nil {
		return "", ""
	}
	if kind = ty.DefKind(); kind == "" {
		return "", ""
	}
	return kind, ty.Name()
}

// refineC drops specifiers without a body (references, not definitions) and names a
// typedef after the name it declares, with the kind of the type it defines. C++ shares it.
func refineC(n syntaxNode, d *defInfo) {
	t := n.Type()
	if strings.HasSuffix(t, "_specifier") && n.Field("body") == nil {
		d.kind = ""
		return
	}
	if t != "type_definition" {
		return
	}
	if dd := n.Field("declarator"); dd != nil {
		d.name = dd.DeclName()
	}
	if ty := n.Field("type"); ty != nil && ty.Field("body") != nil {
		if k := ty.DefKind(); k != "" {
			d.kind = k
		}
	}
}
