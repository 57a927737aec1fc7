package chunker

func init() {
	register(language{
		name:       "typescript",
		extensions: []string{".ts", ".mts", ".cts"},
		aliases:    []string{"ts"},
		grammar:    "github.com/smacker/go-tree-sitter/typescript/typescript",
		spec:       tsSpec(),
	})
	register(language{
		name:       "tsx",
		extensions: []string{".tsx"},
		grammar:    "github.com/smacker/go-tree-sitter/typescript/tsx",
		spec:       tsSpec(),
	})
}

// tsSpec reads TypeScript and TSX: JavaScript plus types, interfaces, enums and namespaces.
func tsSpec() langSpec {
	s := jsSpec()
	for k, v := range map[string]string{
		"abstract_class_declaration": KindClass,
		"interface_declaration":      KindInterface,
		"type_alias_declaration":     KindType,
		"enum_declaration":           KindEnum,
		"function_signature":         KindFunction,
		"abstract_method_signature":  KindMethod,
		"internal_module":            KindModule,
		"module":                     KindModule,
	} {
		s.defs[k] = v
	}
	s.wrappers["ambient_declaration"] = ""
	return s
}
