// Command sop shows procedural memory: it loads a directory of standard operating
// procedures, matches a few user requests against their triggers and renders the best
// procedure as prompt text for an agent.
//
//	go run ./examples/sop                      # the procedures embedded next to this file
//	go run ./examples/sop -dir DIR "my query"  # your own directory and queries
package main

import (
	"embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"strings"

	"github.com/agentmem/memory/sop"
)

//go:embed procedures/*.json
var builtin embed.FS

func main() {
	dir := flag.String("dir", "", "directory of procedure files (default: the built-in examples)")
	flag.Parse()

	lib, err := load(*dir)
	if err != nil && lib.Len() == 0 {
		log.Fatal(err)
	}
	if err != nil {
		// Invalid files are reported; the valid procedures are still usable.
		fmt.Fprintln(os.Stderr, "warning:", err)
	}

	fmt.Printf("%d procedures:\n", lib.Len())
	for _, s := range lib.List("") {
		fmt.Printf("  %-28s %-12s priority %2d  triggers: %s\n", s.Name, s.Category, s.Priority, strings.Join(s.Trigger, ", "))
	}

	queries := flag.Args()
	if len(queries) == 0 {
		queries = []string{
			"my python script throws a KeyError traceback",
			"there seems to be a memory leak in the worker process",
			"rebasing my branch stopped halfway with conflicts",
			"I accidentally pushed our AWS API key to GitHub",
			"what's the best debugger for Go?", // a near miss: "bug" is not "debugger"
		}
	}
	fmt.Println()
	for _, q := range queries {
		ms := lib.Match(q, 3, sop.MatchOptions{})
		fmt.Printf("query: %q\n", q)
		if len(ms) == 0 {
			fmt.Println("  no procedure applies")
			continue
		}
		for _, m := range ms {
			fmt.Printf("  %-28s score %5.2f  matched: %s\n", m.SOP.Name, m.Score, strings.Join(m.MatchedTriggers, ", "))
		}
	}

	// Render the best procedure for the first query as it would go into a prompt.
	if ms := lib.Match(queries[0], 1, sop.MatchOptions{}); len(ms) > 0 {
		fmt.Println()
		fmt.Print(sop.Render(ms[0].SOP, sop.RenderContext{Query: queries[0]}))
	}
}

// load reads dir with sop.LoadDir, or the embedded examples when dir is empty.
func load(dir string) (*sop.Library, error) {
	if dir != "" {
		return sop.LoadDir(dir, sop.Options{})
	}
	lib := sop.NewLibrary(sop.Options{})
	files, err := fs.Glob(builtin, "procedures/*.json")
	if err != nil {
		return lib, err
	}
	var errs []error
	for _, f := range files {
		data, err := builtin.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		procs, perr := sop.Parse(f, data, true)
		errs = append(errs, perr, lib.Add(procs...))
	}
	return lib, errors.Join(errs...)
}
