package chunker

func init() {
	register(language{
		name:       "cpp",
		extensions: []string{".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx"},
		aliases:    []string{"c++", "cxx"},
		grammar:    "github.com/smacker/go-tree-sitter/cpp",
		spec: langSpec{
			comments: set("comment"),
			imports:  set("preproc_include", "using_declaration"),
			defs: map[string]string{
				"function_definition":  KindFunction,
				"class_specifier":      KindClass,
				"struct_specifier":     KindStruct,
				"union_specifier":      KindStruct,
				"enum_specifier":       KindEnum,
				"type_definition":      KindType,
				"alias_declaration":    KindType,
				"namespace_definition": KindModule,
			},
			wrappers: map[string]string{"template_declaration": ""},
			declares: declaresC,
			refine:   refineC,
		},
	})
}
