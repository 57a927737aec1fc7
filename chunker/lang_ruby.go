package chunker

func init() {
	register(language{
		name:       "ruby",
		extensions: []string{".rb"},
		aliases:    []string{"rb"},
		grammar:    "github.com/smacker/go-tree-sitter/ruby",
		spec: langSpec{
			comments: set("comment"),
			defs: map[string]string{
				"method":           KindFunction,
				"singleton_method": KindFunction,
				"class":            KindClass,
				"singleton_class":  KindClass,
				"module":           KindModule,
			},
			refine: refineRuby,
		},
	})
}

// refineRuby makes a singleton method (def self.f) a method even outside a class.
func refineRuby(n syntaxNode, d *defInfo) {
	if n.Type() == "singleton_method" && d.kind == KindFunction {
		d.kind = KindMethod
	}
}
