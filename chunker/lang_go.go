package chunker

import "strings"

func init() {
	register(language{
		name:       "go",
		extensions: []string{".go"},
		aliases:    []string{"golang"},
		grammar:    "github.com/smacker/go-tree-sitter/golang",
		spec: langSpec{
			comments: set("comment"),
			imports:  set("import_declaration"),
			neutral:  set("package_clause"),
			defs: map[string]string{
				"function_declaration": KindFunction,
				"method_declaration":   KindMethod,
				"type_declaration":     KindType,
			},
			refine: refineGo,
		},
	})
}

// refineGo names a type declaration after its (first) type and makes it a struct or
// interface when it is one, and gives a method its receiver's type as parent.
func refineGo(n syntaxNode, d *defInfo) {
	switch n.Type() {
	case "type_declaration":
		if spec := n.FirstNamed("type_spec"); spec != nil {
			if ty := spec.Field("type"); ty != nil {
				switch ty.Type() {
				case "struct_type":
					d.kind = KindStruct
				case "interface_type":
					d.kind = KindInterface
				}
			}
			if nn := spec.Field("name"); nn != nil {
				d.name = nn.Text()
			}
		} else if spec := n.FirstNamed("type_alias"); spec != nil {
			if nn := spec.Field("name"); nn != nil {
				d.name = nn.Text()
			}
		}
	case "method_declaration":
		if r := n.Field("receiver"); r != nil {
			d.parent = goReceiverType(r.Text())
		}
	}
}

// goReceiverType returns the type of a Go method receiver ("(s *Stack[T])" gives "Stack").
func goReceiverType(r string) string {
	r = strings.Trim(r, "()")
	f := strings.Fields(r)
	if len(f) == 0 {
		return ""
	}
	t := f[len(f)-1]
	t = strings.TrimLeft(t, "*")
	if i := strings.IndexByte(t, '['); i >= 0 {
		t = t[:i]
	}
	return t
}
