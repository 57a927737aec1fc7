package chunker

// langSpec tells the chunker how to read one grammar's tree.
type langSpec struct {
	// comments are the node types of comments (they attach to the node they precede).
	comments map[string]bool
	// attached are other node types that attach to the next node (Rust attributes).
	attached map[string]bool
	// imports are import statements; neutral nodes (package clause) keep a chunk "import".
	imports, neutral map[string]bool
	// defs maps definition node types to kinds.
	defs map[string]string
	// wrappers are nodes holding one definition (decorators, export, template): the child
	// named by the field (or, with field "", the last named child that is a definition).
	wrappers map[string]string
	// docstrings: the first statement of a body (or module) that is a string is a docstring.
	docstrings bool
}

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// classLike kinds turn the functions they hold into methods.
var classLike = map[string]bool{
	KindClass: true, KindStruct: true, KindInterface: true, KindEnum: true, KindImpl: true,
	KindType: true,
}

var specs = map[string]*langSpec{
	"go": {
		comments: set("comment"),
		imports:  set("import_declaration"),
		neutral:  set("package_clause"),
		defs: map[string]string{
			"function_declaration": KindFunction,
			"method_declaration":   KindMethod,
			"type_declaration":     KindType,
		},
	},
	"python": {
		comments: set("comment"),
		imports:  set("import_statement", "import_from_statement", "future_import_statement"),
		defs: map[string]string{
			"function_definition": KindFunction,
			"class_definition":    KindClass,
		},
		wrappers:   map[string]string{"decorated_definition": "definition"},
		docstrings: true,
	},
	"javascript": jsSpec(),
	"typescript": tsSpec(),
	"tsx":        tsSpec(),
	"java": {
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
	"rust": {
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
	},
	"c": {
		comments: set("comment"),
		imports:  set("preproc_include"),
		defs: map[string]string{
			"function_definition": KindFunction,
			"struct_specifier":    KindStruct,
			"union_specifier":     KindStruct,
			"enum_specifier":      KindEnum,
			"type_definition":     KindType,
		},
	},
	"cpp": {
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
	},
	"csharp": {
		comments: set("comment"),
		imports:  set("using_directive", "extern_alias_directive"),
		defs: map[string]string{
			"class_declaration":                 KindClass,
			"struct_declaration":                KindStruct,
			"interface_declaration":             KindInterface,
			"enum_declaration":                  KindEnum,
			"record_declaration":                KindClass,
			"record_struct_declaration":         KindStruct,
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
	"ruby": {
		comments: set("comment"),
		defs: map[string]string{
			"method":           KindFunction,
			"singleton_method": KindFunction,
			"class":            KindClass,
			"singleton_class":  KindClass,
			"module":           KindModule,
		},
	},
}

func jsSpec() *langSpec {
	return &langSpec{
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
	}
}

func tsSpec() *langSpec {
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
