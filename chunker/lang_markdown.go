package chunker

func init() {
	register(language{
		name:       "markdown",
		extensions: []string{".md", ".mdx"},
		aliases:    []string{"md"},
		prose:      true,
		proseSpans: markdownSpans,
	})
}
