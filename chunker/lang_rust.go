package chunker

import "strings"

func init() {
	register(language{
		name:       "rust",
		extensions: []string{".rs"},
		aliases:    []string{"rs"},
		grammar:    "github.com/smacker/go-tree-sitter/rust",
		spec: langSpec{
			comments: set("line_comment", "block_comment"),
			attached: set("attribute_item"),
			imports:  set("use_declaration", "extern_crate_declaration"),
			defs: map[string]string{
				"function_item":           KindFunction,
				"function_signature_item": KindFunction,
				"struct_item":             KindStruct,
				"union_item":              KindStruct,
				"enum_item":               KindEnum,
				"trait_item":              KindInterface,
				"impl_item":               KindImpl,
				"mod_item":                KindModule,
				"type_item":               KindType,
				"macro_definition":        KindFunction,
			},
			refine: refineRust,
		},
	})
}

// refineRust names an impl block after the type it implements, without type parameters.
func refineRust(n syntaxNode, d *defInfo) {
	if n.Type() != "impl_item" {
		return
	}
	if ty := n.Field("type"); ty != nil {
		d.name = ty.Text()
		if i := strings.IndexByte(d.name, '<'); i > 0 {
			d.name = d.name[:i]
		}
	}
}
