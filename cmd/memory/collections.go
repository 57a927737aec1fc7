package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/agentmem/memory"
)

func init() {
	register(command{
		name:    "collections",
		summary: "list the collections of a store with their sizes, delete one (--delete NAME) or rename one (--rename OLD NEW)",
		run:     runCollections,
	})
}

func runCollections(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("collections", stderr)
	var sf storeFlags
	sf.register(fs, true)
	del := fs.String("delete", "", "delete this collection with all its documents")
	rename := fs.String("rename", "", "rename this collection (to the name after it, or --to)")
	to := fs.String("to", "", "the new name of the collection --rename names")
	asJSON := fs.Bool("json", false, `one JSON object per collection: {"name": ..., "count": ...}`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *rename != "" && *to == "" && fs.NArg() == 1 {
		*to = fs.Arg(0) // --rename OLD NEW
	} else if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	if sf.dir == "" || (*rename != "") != (*to != "") || (*rename != "" && *del != "") {
		fs.Usage()
		return errUsage
	}
	var extra []memory.Option
	if *del == "" && *rename == "" { // listing only reads: beside a writer it reads through it
		extra = append(extra, memory.ReadOnly())
	}
	m, err := sf.open(sf.dir, stderr, extra...)
	if err != nil {
		return err
	}
	defer m.Close()
	if *rename != "" {
		c, err := openCollection(m, *rename)
		if err != nil {
			return err
		}
		n := c.Count()
		if err := m.RenameCollection(ctx, c.Name(), *to); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "renamed collection %q to %q (%d documents)\n", escapeControls(c.Name(), false), escapeControls(*to, false), n)
		return nil
	}
	if *del != "" {
		c, err := openCollection(m, *del)
		if err != nil {
			return err
		}
		n := c.Count()
		if err := m.DeleteCollection(ctx, *del); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted collection %q (%d documents)\n", escapeControls(c.Name(), false), n)
		return nil
	}
	names := m.Collections()
	counts := make([]int, len(names))
	for i, n := range names { // a collection that cannot be read fails the command, never counts 0
		if counts[i], err = m.Collection(n).Len(ctx); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for i, n := range names {
			if err := enc.Encode(struct {
				Name  string `json:"name"`
				Count int    `json:"count"`
			}{n, counts[i]}); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "COLLECTION\tDOCUMENTS")
	for i, n := range names {
		fmt.Fprintf(tw, "%s\t%d\n", cell(n, 80), counts[i])
	}
	return tw.Flush()
}
