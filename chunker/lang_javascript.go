package chunker

func init() {
	register(language{
		name:       "javascript",
		extensions: []string{".js", ".mjs", ".cjs", ".jsx"},
		aliases:    []string{"js", "jsx"},
		grammar:    "github.com/smacker/go-tree-sitter/javascript",
		spec:       jsSpec(),
	})
}

// jsSpec reads JavaScript; TypeScript (lang_typescript.go) extends it.
func jsSpec() langSpec {
	return langSpec{
		comments: set("comment", "html_comment"),
		imports:  set("import_statement"),
		defs: map[string]string{
			"function_declaration":           KindFunction,
			"generator_function_declaration": KindFunction,
			"class_declaration":              KindClass,
			"class":                          KindClass,
			"method_definition":              KindMethod,
		},
		wrappers: map[string]string{"export_statement": "declaration"},
		declares: declaresJS,
	}
}

// declaresJS recognises functions bound to a name: `const f = () => {}` is a function
// named f, and a class field holding a function is a method.
func declaresJS(n syntaxNode) (kind, name string) {
	switch n.Type() {
	case "lexical_declaration", "variable_declaration":
		decl := n.FirstNamed("variable_declarator")
		if decl == nil {
			return "", ""
		}
		if v := decl.Field("value"); v == nil || !isFunctionValue(v.Type()) {
			return "", ""
		}
		if nn := decl.Field("name"); nn != nil {
			name = nn.Text()
		}
		return KindFunction, name
	case "field_definition", "public_field_definition":
		if v := n.Field("value"); v == nil || !isFunctionValue(v.Type()) {
			return "", ""
		}
		if nn := n.Field("property"); nn != nil {
			name = nn.Text()
		} else if nn := n.Field("name"); nn != nil {
			name = nn.Text()
		}
		return KindMethod, name
	}
	return "", ""
}

func isFunctionValue(t string) bool {
	return t == "arrow_function" || t == "function_expression" || t == "function" ||
		t == "generator_function"
}
