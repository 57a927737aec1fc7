package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentmem/memory"
	"github.com/spf13/cobra"
)

func newDeleteCmd() *cobra.Command {
	var sf storeFlags
	var o deleteOptions
	c := newCommand("delete", "delete documents by id, --where filter or --source path", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return runDelete(ctx, &sf, o, args, stdout, stderr)
	})
	fs := c.Flags()
	sf.addStore(fs)
	addCollection(fs, &o.col, "the collection `C` (default: the default collection)")
	fs.StringVar(&o.where, "where", "", "delete the documents whose metadata match this filter `JSON`, e.g. '{\"year\":{\"$lt\":2000}}'")
	fs.StringVar(&o.source, "source", "", "delete the documents indexed from this `PATH`")
	return c
}

// deleteOptions are the flags of memory delete beside the store's.
type deleteOptions struct {
	col, where, source string
}

func runDelete(ctx context.Context, sf *storeFlags, o deleteOptions, args []string, stdout, stderr io.Writer) error {
	if err := sf.need(); err != nil {
		return err
	}
	modes := 0
	for _, set := range []bool{len(args) > 0, o.where != "", o.source != ""} {
		if set {
			modes++
		}
	}
	switch {
	case modes == 0:
		return usagef("nothing to delete: give IDs, --where JSON or --source PATH")
	case modes > 1:
		return usagef("delete by IDs, by --where or by --source, one of them at a time")
	}
	var filter memory.Where
	switch {
	case o.where != "":
		w, err := memory.ParseWhere([]byte(o.where))
		if err != nil {
			return err
		}
		filter = w
	case o.source != "":
		filter = memory.Where{"source": sourceOf(o.source)}
	}
	m, c, err := sf.openCollection(o.col, stderr)
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
		if n == 0 && o.source != "" && sourceOf(o.source) != o.source {
			fmt.Fprintf(stderr, "note: sources are absolute paths; none is %q\n", capEcho(sourceOf(o.source)))
		}
		return nil
	}
	// By id: report the ids that are not there, delete the others.
	var ids, missing []string
	for _, id := range args {
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
