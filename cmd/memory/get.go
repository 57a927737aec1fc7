package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agentmem/memory"
)

func init() {
	register(command{
		name:    "get",
		summary: "print stored documents by id (--json for JSON lines)",
		run:     runGet,
	})
}

func runGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("get", stderr)
	var sf storeFlags
	sf.register(fs, true)
	col := fs.String("collection", "", "collection (default: the default collection)")
	asJSON := fs.Bool("json", false, "one JSON document per line")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if sf.dir == "" || fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	m, c, err := sf.readCollection(*col, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	enc := json.NewEncoder(stdout)
	var missing []string
	for i, id := range fs.Args() {
		d, err := c.Get(ctx, id)
		if errors.Is(err, memory.ErrNotFound) {
			missing = append(missing, id)
			continue
		}
		if err != nil {
			return err
		}
		if *asJSON {
			if err := enc.Encode(d); err != nil {
				return err
			}
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printDocument(stdout, d)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w in collection %q: %s", memory.ErrNotFound, c.Name(), strings.Join(quoteAll(missing), ", "))
	}
	return nil
}

// printDocument writes a document as "field: value" lines and its text, escaped.
func printDocument(w io.Writer, d memory.Document) {
	fmt.Fprintf(w, "id:     %s\n", escapeControls(d.ID, false))
	if d.Title != "" {
		fmt.Fprintf(w, "title:  %s\n", escapeControls(d.Title, false))
	}
	if d.Source != "" {
		fmt.Fprintf(w, "source: %s\n", escapeControls(d.Source, false))
	}
	keys := make([]string, 0, len(d.Metadata))
	for k := range d.Metadata {
		if k != "source" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "meta:   %s = %s\n", escapeControls(k, false), escapeControls(fmt.Sprint(d.Metadata[k]), false))
	}
	fmt.Fprintf(w, "text:\n%s\n", escapeControls(d.Text, true))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
