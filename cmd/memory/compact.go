package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

func newCompactCmd() *cobra.Command {
	var sf storeFlags
	var col string
	var all bool
	c := newCommand("compact", "merge a collection's BM25 index into one segment and put its dense index's inverted lists in order", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := sf.need(); err != nil {
			return err
		}
		if err := noArgs(args); err != nil {
			return err
		}
		if all && col != "" {
			return usagef("--all and --collection: give one")
		}
		return runCompact(ctx, &sf, col, all, stdout, stderr)
	})
	fs := c.Flags()
	sf.addStore(fs)
	addCollection(fs, &col, "the collection `C` (default: the default collection)")
	fs.BoolVar(&all, "all", false, "compact every collection of the store")
	return c
}

func runCompact(ctx context.Context, sf *storeFlags, col string, all bool, stdout, stderr io.Writer) error {
	m, c, err := sf.openCollection(col, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	t := time.Now()
	if all {
		err = m.Compact(ctx)
	} else {
		err = c.Compact(ctx)
	}
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%q", c.Name())
	if all {
		what = "every collection"
	}
	fmt.Fprintf(stdout, "compacted the BM25 index of %s in %s\n", what, time.Since(t).Round(time.Millisecond))
	return nil
}
