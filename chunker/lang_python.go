package chunker

func init() {
	register(language{
		name:       "python",
		extensions: []string{".py", ".pyi", ".pyw"},
		aliases:    []string{"py"},
		grammar:    "github.com/smacker/go-tree-sitter/python",
		spec: langSpec{
			comments: set("comment"),
			imports:  set("import_statement", "import_from_statement", "future_import_statement"),
			defs: map[string]string{
				"function_definition": KindFunction,
				"class_definition":    KindClass,
			},
			wrappers:   map[string]string{"decorated_definition": "definition"},
			docstrings: true,
		},
	})
}
