package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentmem/memory"
)

func init() {
	register(command{
		name:    "delete",
		summary: "delete documents by id, --where filter or --source path",
		run:     runDelete,
	})
}

func runDelete(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("delete", stderr)
	var sf storeFlags
	sf.register(fs, true)
	col := fs.String("collection", "", "collection (default: the default collection)")
	where := fs.String("where", "", `delete the documents whose metadata match this filter, e.g. '{"year":{"$lt":2000}}'`)
	source := fs.String("source", "", "delete the documents indexed from this path")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	modes := 0
	for _, set := range []bool{fs.NArg() > 0, *where != "", *source != ""} {
		if set {
			modes++
		}
	}
	if sf.dir == "" || modes != 1 {
		fs.Usage()
		return errUsage
	}
	var filter memory.Where
	switch {
	case *where != "":
		w, err := memory.ParseWhere([]byte(*where))
		if err != nil {
			return err
		}
		filter = w
	case *source != "":
		filter = memory.Where{"source": sourceOf(*source)}
	}
	m, c, err := sf.openCollection(*col, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	if filter != nil {
		n, err := c.DeleteWhere(ctx, filter)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted %d documents from %q\n", n, c.Name())
		if n == 0 && *source != "" && sourceOf(*source) != *source {
			fmt.Fprintf(stderr, "note: sources are absolute paths; none is %q\n", capEcho(sourceOf(*source)))
		}
		return nil
	}
	// By id: report the ids that are not there, delete the others.
	var ids, missing []string
	for _, id := range fs.Args() {
		if _, err := c.Get(ctx, id); errors.Is(err, memory.ErrNotFound) {
			missing = append(missing, id)
			continue
		} else if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	if len(ids) > 0 {
		if err := c.Delete(ctx, ids...); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "deleted %d documents from %q\n", len(ids), c.Name())
	if len(missing) > 0 {
		return fmt.Errorf("%w in collection %q: %v", memory.ErrNotFound, c.Name(), quoteAll(missing))
	}
	return nil
}
