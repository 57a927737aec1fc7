package beir

import "strings"

// SplitContents splits a Search-R1 corpus "contents" field ("\"Title\"\ntext") into its
// title and text: the first line is the title, without the one pair of double quotes
// that wraps it; the lines after it are the text. Only that pair is removed, so a title
// that itself begins or ends with a quote keeps it (`""Weird Al" Yankovic"` gives
// `"Weird Al" Yankovic`), and rendering the title back in quotes gives the contents as
// they were. A first line that is not wrapped in quotes is the title as it is.
func SplitContents(contents string) (title, text string) {
	title, text, _ = strings.Cut(contents, "\n")
	if len(title) >= 2 && title[0] == '"' && title[len(title)-1] == '"' {
		title = title[1 : len(title)-1]
	}
	return title, text
}
