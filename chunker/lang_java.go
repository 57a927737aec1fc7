package chunker

func init() {
	register(language{
		name:       "java",
		extensions: []string{".java"},
		grammar:    "github.com/smacker/go-tree-sitter/java",
		spec: langSpec{
			comments: set("line_comment", "block_comment"),
			imports:  set("import_declaration"),
			neutral:  set("package_declaration"),
			defs: map[string]string{
				"class_declaration":               KindClass,
				"interface_declaration":           KindInterface,
				"enum_declaration":                KindEnum,
				"record_declaration":              KindType,
				"annotation_type_declaration":     KindInterface,
				"method_declaration":              KindMethod,
				"constructor_declaration":         KindMethod,
				"compact_constructor_declaration": KindMethod,
			},
		},
	})
}
