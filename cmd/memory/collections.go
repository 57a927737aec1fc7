package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentmem/memory"
)

func init() {
	register(command{
		name:    "collections",
		summary: "list the collections of a store (sizes, analyzers, metadata); create, delete, rename one or set its metadata or analyzer",
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
	create := fs.String("create", "", "create this collection, empty (an existing one is an error); with --analyzer and --metadata")
	setMeta := fs.String("set-metadata", "", "replace this collection's metadata with the JSON object after it (or --metadata); {} clears it")
	setAna := fs.String("set-analyzer", "", "change this collection's BM25 analyzer to the one after it (or --analyzer) and rebuild its BM25 index")
	analyzer := fs.String("analyzer", "", "BM25 analyzer for --create or --set-analyzer ("+analyzerList()+")")
	metadata := fs.String("metadata", "", `collection metadata as a JSON object for --create or --set-metadata, e.g. '{"kind":"gold"}'`)
	asJSON := fs.Bool("json", false, `one JSON object per collection: {"name": ..., "count": ..., "analyzer": ..., "metadata": {...}}`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// A flag that names a collection, given an empty name, is an error (not "no action":
	// --create '' would list the collections and exit 0).
	var empty error
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "delete", "rename", "to", "create", "set-metadata", "set-analyzer":
			if empty == nil && f.Value.String() == "" {
				empty = fmt.Errorf("%w: --%s names no collection (an empty name): give its name, e.g. --%s notes", memory.ErrInvalidCollection, f.Name, f.Name)
			}
		}
	})
	if empty != nil {
		return empty
	}
	actions := 0
	for _, a := range []string{*del, *rename, *create, *setMeta, *setAna} {
		if a != "" {
			actions++
		}
	}
	switch {
	case *rename != "" && *to == "" && fs.NArg() == 1:
		*to = fs.Arg(0) // --rename OLD NEW
	case *setMeta != "" && *metadata == "" && fs.NArg() == 1:
		*metadata = fs.Arg(0) // --set-metadata NAME JSON
	case *setAna != "" && *analyzer == "" && fs.NArg() == 1:
		*analyzer = fs.Arg(0) // --set-analyzer NAME X
	case fs.NArg() != 0:
		fs.Usage()
		return errUsage
	}
	if sf.dir == "" || actions > 1 || (*rename != "") != (*to != "") ||
		(*setMeta != "" && *metadata == "") || (*setAna != "" && *analyzer == "") ||
		(*analyzer != "" && *create == "" && *setAna == "") || (*metadata != "" && *create == "" && *setMeta == "") {
		fs.Usage()
		return errUsage
	}
	var md map[string]any
	if *metadata != "" {
		var err error
		if md, err = parseCollectionMetadata(*metadata); err != nil {
			return err
		}
	}
	var extra []memory.Option
	if actions == 0 { // listing only reads: beside a writer it reads through it
		extra = append(extra, memory.ReadOnly())
	}
	m, err := sf.open(sf.dir, stderr, extra...)
	if err != nil {
		return err
	}
	defer m.Close()
	switch {
	case *create != "":
		if _, err := m.GetCollection(*create); err == nil {
			return fmt.Errorf("%w: %q", memory.ErrCollectionExists, capEcho(*create))
		} else if !errors.Is(err, memory.ErrCollectionNotFound) {
			return err
		}
		var opts []memory.CollectionOption
		if *analyzer != "" {
			opts = append(opts, memory.WithCollectionAnalyzer(*analyzer))
		}
		if md != nil {
			opts = append(opts, memory.WithCollectionMetadata(md))
		}
		c, err := m.CreateCollection(*create, opts...)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created collection %q (analyzer %s)\n", escapeControls(capEcho(c.Name()), false), c.Analyzer())
		return nil
	case *setMeta != "":
		c, err := openCollection(m, *setMeta)
		if err != nil {
			return err
		}
		if err := m.SetCollectionMetadata(ctx, c.Name(), md); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "set the metadata of collection %q (%d keys)\n", escapeControls(capEcho(c.Name()), false), len(md))
		return nil
	case *setAna != "":
		c, err := openCollection(m, *setAna)
		if err != nil {
			return err
		}
		old := c.Analyzer()
		start := time.Now()
		if err := m.SetCollectionAnalyzer(ctx, c.Name(), *analyzer); err != nil {
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
	case *rename != "":
		c, err := openCollection(m, *rename)
		if err != nil {
			return err
		}
		n, err := c.Count(ctx)
		if err != nil {
			return err
		}
		if err := m.RenameCollection(ctx, c.Name(), *to); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "renamed collection %q to %q (%d documents)\n", escapeControls(capEcho(c.Name()), false), escapeControls(capEcho(*to), false), n)
		return nil
	case *del != "":
		c, err := openCollection(m, *del)
		if err != nil {
			return err
		}
		n, err := c.Count(ctx)
		if err != nil {
			return err
		}
		if err := m.DeleteCollection(ctx, *del); err != nil {
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
	if *asJSON {
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
