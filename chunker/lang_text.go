package chunker

func init() {
	// Plain text has no extension of its own: a path [LanguageOf] does not know is text.
	register(language{
		name:    "text",
		aliases: []string{"txt"},
		prose:   true,
	})
}
