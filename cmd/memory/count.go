package main

import (
	"context"
	"fmt"
	"io"
)

func init() {
	register(command{
		name:    "count",
		summary: "print the number of documents in a collection",
		run:     runCount,
	})
}

func runCount(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("count", stderr)
	var sf storeFlags
	sf.register(fs, true)
	col := fs.String("collection", "", "collection (default: the default collection)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if sf.dir == "" || fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	m, c, err := sf.readCollection(*col, stderr)
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
