package chunker_test

import (
	"fmt"

	"github.com/agentmem/memory/chunker"
)

func ExampleText() {
	doc := "# Guide\n\nIntro text.\n\n## Install\n\nRun the installer. Then restart.\n"
	for _, c := range chunker.Text(doc, chunker.TextOptions{Budget: 40}) {
		fmt.Printf("%q %q\n", c.Headings, c.Content)
	}
	// Output:
	// ["Guide"] "# Guide\n\nIntro text.\n\n"
	// ["Guide" "Install"] "## Install\n\nRun the installer. Then restart.\n"
}
