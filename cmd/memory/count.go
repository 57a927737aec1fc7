package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

func newCountCmd() *cobra.Command {
	var sf storeFlags
	var col string
	c := newCommand("count", "print the number of documents in a collection", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		if err := sf.need(); err != nil {
			return err
		}
		if err := noArgs(args); err != nil {
			return err
		}
		return runCount(ctx, &sf, col, stdout, stderr)
	})
	fs := c.Flags()
	sf.addStore(fs)
	addCollection(fs, &col, "the collection `C` (default: the default collection)")
	return c
}

func runCount(ctx context.Context, sf *storeFlags, col string, stdout, stderr io.Writer) error {
	m, c, err := sf.readCollection(col, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	n, err := c.Count(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, n)
	return nil
}
