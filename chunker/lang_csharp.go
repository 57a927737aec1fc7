package chunker

func init() {
	register(language{
		name:       "csharp",
		extensions: []string{".cs"},
		aliases:    []string{"c#", "cs"},
		grammar:    "github.com/smacker/go-tree-sitter/csharp",
		spec: langSpec{
			comments: set("comment"),
			imports:  set("using_directive", "extern_alias_directive"),
			defs: map[string]string{
				"class_declaration":                 KindClass,
				"struct_declaration":                KindStruct,
				"interface_declaration":             KindInterface,
				"enum_declaration":                  KindEnum,
				"record_declaration":                KindClass,
				"delegate_declaration":              KindType,
				"method_declaration":                KindMethod,
				"constructor_declaration":           KindMethod,
				"destructor_declaration":            KindMethod,
				"operator_declaration":              KindMethod,
				"conversion_operator_declaration":   KindMethod,
				"property_declaration":              KindMethod,
				"indexer_declaration":               KindMethod,
				"local_function_statement":          KindFunction,
				"namespace_declaration":             KindModule,
				"file_scoped_namespace_declaration": KindModule,
			},
		},
	})
}
