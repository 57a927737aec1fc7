package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentmem/memory"
	"github.com/spf13/cobra"
)

func newCollectionsCmd() *cobra.Command {
	var sf storeFlags
	var o collectionsOptions
	var c *cobra.Command
	c = newCommand("collections", "list the collections of a store (sizes, analyzers, metadata); create, delete, rename one or set its metadata or analyzer",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			// A flag that names a collection, given an empty name, is an error (not "no
			// action": --create '' would list the collections and exit 0).
			for _, name := range []string{"create", "delete", "rename", "set-analyzer", "set-metadata", "to"} {
				if f := c.Flags().Lookup(name); f.Changed && f.Value.String() == "" {
					return fmt.Errorf("%w: --%s names no collection (an empty name): give its name, e.g. --%s notes", memory.ErrInvalidCollection, name, name)
				}
			}
			return runCollections(ctx, &sf, o, args, stdout, stderr)
		})
	fs := c.Flags()
	sf.addStore(fs)
	fs.StringVar(&o.del, "delete", "", "delete the collection `NAME` with all its documents")
	fs.StringVar(&o.rename, "rename", "", "rename the collection `OLD` (to the name after it, or --to)")
	fs.StringVar(&o.to, "to", "", "the `NEW` name of the collection --rename names")
	fs.StringVar(&o.create, "create", "", "create the collection `NAME`, empty (an existing one is an error); with --analyzer and --metadata")
	fs.StringVar(&o.setMeta, "set-metadata", "", "replace the metadata of the collection `NAME` with the JSON object after it (or --metadata); {} clears it")
	fs.StringVar(&o.setAna, "set-analyzer", "", "change the BM25 analyzer of the collection `NAME` to the one after it (or --analyzer) and rebuild its BM25 index")
	fs.StringVar(&o.analyzer, "analyzer", "", "BM25 analyzer for --create or --set-analyzer ("+analyzerList()+")")
	fs.StringVar(&o.metadata, "metadata", "", "collection metadata as a `JSON` object for --create or --set-metadata, e.g. '{\"kind\":\"gold\"}'")
	fs.BoolVar(&o.asJSON, "json", false, `one JSON object per collection: {"name": ..., "count": ..., "analyzer": ..., "metadata": {...}}`)
	completeValues(fs, memory.Analyzers(), "analyzer")
	return c
}

// collectionsOptions are the flags of memory collections beside the store's.
type collectionsOptions struct {
	del, rename, to, create, setMeta, setAna, analyzer, metadata string
	asJSON                                                       bool
}

// check takes an action's argument (--rename OLD NEW, --set-metadata NAME JSON,
// --set-analyzer NAME X) from args, and reports a combination of flags that makes no sense
// as a usage error.
func (o *collectionsOptions) check(args []string) error {
	switch {
	case o.rename != "" && o.to == "" && len(args) == 1:
		o.to = args[0] // --rename OLD NEW
	case o.setMeta != "" && o.metadata == "" && len(args) == 1:
		o.metadata = args[0] // --set-metadata NAME JSON
	case o.setAna != "" && o.analyzer == "" && len(args) == 1:
		o.analyzer = args[0] // --set-analyzer NAME X
	case len(args) != 0:
		return usagef("unexpected argument %q (only --rename OLD NEW, --set-metadata NAME JSON and --set-analyzer NAME X take one)", capEcho(args[0]))
	}
	switch {
	case o.actions() > 1:
		return usagef("one action per call: --create, --delete, --rename, --set-metadata or --set-analyzer")
	case o.rename != "" && o.to == "":
		return usagef("--rename OLD needs the NEW name (after it, or --to NEW)")
	case o.to != "" && o.rename == "":
		return usagef("--to NEW goes with --rename OLD")
	case o.setMeta != "" && o.metadata == "":
		return usagef("--set-metadata NAME needs a JSON object (after it, or --metadata JSON)")
	case o.setAna != "" && o.analyzer == "":
		return usagef("--set-analyzer NAME needs an analyzer (after it, or --analyzer X)")
	case o.analyzer != "" && o.create == "" && o.setAna == "":
		return usagef("--analyzer goes with --create or --set-analyzer")
	case o.metadata != "" && o.create == "" && o.setMeta == "":
		return usagef("--metadata goes with --create or --set-metadata")
	}
	return nil
}

// actions is the number of actions the flags ask for (one at most).
func (o collectionsOptions) actions() int {
	n := 0
	for _, a := range []string{o.del, o.rename, o.create, o.setMeta, o.setAna} {
		if a != "" {
			n++
		}
	}
	return n
}

func runCollections(ctx context.Context, sf *storeFlags, o collectionsOptions, args []string, stdout, stderr io.Writer) error {
	if err := sf.need(); err != nil {
		return err
	}
	if err := o.check(args); err != nil {
		return err
	}
	var md map[string]any
	if o.metadata != "" {
		var err error
		if md, err = parseCollectionMetadata(o.metadata); err != nil {
			return err
		}
	}
	var extra []memory.Option
	if o.actions() == 0 { // listing only reads: beside a writer it reads through it
		extra = append(extra, memory.ReadOnly())
	}
	m, err := sf.open(sf.dir, stderr, extra...)
	if err != nil {
		return err
	}
	defer m.Close()
	switch {
	case o.create != "":
		if _, err := m.GetCollection(o.create); err == nil {
			return fmt.Errorf("%w: %q", memory.ErrCollectionExists, capEcho(o.create))
		} else if !errors.Is(err, memory.ErrCollectionNotFound) {
			return err
		}
		var opts []memory.CollectionOption
		if o.analyzer != "" {
			opts = append(opts, memory.WithCollectionAnalyzer(o.analyzer))
		}
		if md != nil {
			opts = append(opts, memory.WithCollectionMetadata(md))
		}
		c, err := m.CreateCollection(o.create, opts...)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created collection %q (analyzer %s)\n", escapeControls(capEcho(c.Name()), false), c.Analyzer())
		return nil
	case o.setMeta != "":
		c, err := openCollection(m, o.setMeta)
		if err != nil {
			return err
		}
		if err := m.SetCollectionMetadata(ctx, c.Name(), md); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "set the metadata of collection %q (%d keys)\n", escapeControls(capEcho(c.Name()), false), len(md))
		return nil
	case o.setAna != "":
		c, err := openCollection(m, o.setAna)
		if err != nil {
			return err
		}
		old := c.Analyzer()
		start := time.Now()
		if err := m.SetCollectionAnalyzer(ctx, c.Name(), o.analyzer); err != nil {
			return err
		}
		n, err := c.Count(ctx)
		if err != nil {
			return err
		}
		if now := c.Analyzer(); now == old {
			fmt.Fprintf(stdout, "collection %q already has analyzer %s (BM25 index unchanged)\n", escapeControls(capEcho(c.Name()), false), now)
		} else {
			fmt.Fprintf(stdout, "set the analyzer of collection %q from %s to %s and rebuilt its BM25 index (%d documents, %s)\n",
				escapeControls(capEcho(c.Name()), false), old, now, n, time.Since(start).Round(time.Millisecond))
		}
		return nil
	case o.rename != "":
		c, err := openCollection(m, o.rename)
		if err != nil {
			return err
		}
		n, err := c.Count(ctx)
		if err != nil {
			return err
		}
		if err := m.RenameCollection(ctx, c.Name(), o.to); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "renamed collection %q to %q (%d documents)\n", escapeControls(capEcho(c.Name()), false), escapeControls(capEcho(o.to), false), n)
		return nil
	case o.del != "":
		c, err := openCollection(m, o.del)
		if err != nil {
			return err
		}
		n, err := c.Count(ctx)
		if err != nil {
			return err
		}
		if err := m.DeleteCollection(ctx, o.del); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "deleted collection %q (%d documents)\n", escapeControls(capEcho(c.Name()), false), n)
		return nil
	}
	type info struct {
		Name     string         `json:"name"`
		Count    int            `json:"count"`
		Analyzer string         `json:"analyzer"`
		Metadata map[string]any `json:"metadata"`
	}
	names, err := m.Collections(ctx)
	if err != nil {
		return err
	}
	infos := make([]info, len(names))
	for i, n := range names { // a collection that cannot be read fails the command, never counts 0
		c := m.Collection(n)
		infos[i] = info{Name: n, Analyzer: c.Analyzer()}
		if infos[i].Count, err = c.Count(ctx); err != nil {
			return err
		}
		if infos[i].Metadata, err = c.Metadata(ctx); err != nil {
			return err
		}
	}
	if o.asJSON {
		enc := json.NewEncoder(stdout)
		for _, in := range infos {
			if err := enc.Encode(in); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "COLLECTION\tDOCUMENTS\tANALYZER\tMETADATA")
	for _, in := range infos {
		md := "-"
		if len(in.Metadata) > 0 {
			js, err := json.Marshal(in.Metadata) // keys sorted
			if err != nil {
				return err
			}
			md = cell(string(js), 80)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", cell(in.Name, 80), in.Count, in.Analyzer, md)
	}
	return tw.Flush()
}

// parseCollectionMetadata reads --metadata: one JSON object (string keys; string, number
// or boolean values, which the library checks), or null for none.
func parseCollectionMetadata(s string) (map[string]any, error) {
	var md map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&md); err != nil {
		return nil, fmt.Errorf("%w: --metadata: want a JSON object: %v", memory.ErrInvalidMetadata, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: --metadata: more than one JSON value", memory.ErrInvalidMetadata)
	}
	if md == nil {
		md = map[string]any{}
	}
	return md, nil
}
