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
	"github.com/spf13/cobra"
)

func newGetCmd() *cobra.Command {
	var sf storeFlags
	var o getOptions
	c := newCommand("get", "print stored documents by id (--json for JSON lines)", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return runGet(ctx, &sf, o, args, stdout, stderr)
	})
	fs := c.Flags()
	sf.addStore(fs)
	addCollection(fs, &o.col, "the collection `C` (default: the default collection)")
	fs.BoolVar(&o.asJSON, "json", false, "one JSON document per line")
	fs.BoolVar(&o.withVecs, "vectors", false, "also print each document's stored vectors (JSON: \"embedding\" for a document stored whole, "+
		"\"chunk_embeddings\" for a chunked one; text: the dimension and first values)")
	return c
}

// getOptions are the flags of memory get beside the store's.
type getOptions struct {
	col              string
	asJSON, withVecs bool
}

func runGet(ctx context.Context, sf *storeFlags, o getOptions, args []string, stdout, stderr io.Writer) error {
	if err := sf.need(); err != nil {
		return err
	}
	if len(args) == 0 {
		return usagef("no ID given")
	}
	m, c, err := sf.readCollection(o.col, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	enc := json.NewEncoder(stdout)
	var missing []string
	for i, id := range args {
		d, err := c.Get(ctx, id)
		if errors.Is(err, memory.ErrNotFound) {
			missing = append(missing, id)
			continue
		}
		if err != nil {
			return err
		}
		var vecs [][]float32
		if o.withVecs {
			if vecs, err = c.Vectors(ctx, id); err != nil {
				return err
			}
		}
		if o.asJSON {
			out := docWithVectors{Document: d}
			if len(vecs) == 1 {
				out.Embedding = vecs[0]
			} else if len(vecs) > 1 {
				out.ChunkEmbeddings = vecs
			}
			if err := enc.Encode(out); err != nil {
				return err
			}
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		for k, v := range vecs {
			printVector(stdout, k, len(vecs), v)
		}
		printDocument(stdout, d)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w in collection %q: %s", memory.ErrNotFound, c.Name(), strings.Join(quoteAll(missing), ", "))
	}
	return nil
}

// docWithVectors is a document as `get --json --vectors` prints it.
type docWithVectors struct {
	memory.Document
	Embedding       []float32   `json:"embedding,omitempty"`
	ChunkEmbeddings [][]float32 `json:"chunk_embeddings,omitempty"`
}

// printVector writes one stored vector as a line: its dimension and first values.
func printVector(w io.Writer, k, n int, v []float32) {
	label := "vector:"
	if n > 1 {
		label = fmt.Sprintf("vector %d:", k)
	}
	if v == nil {
		fmt.Fprintf(w, "%-7s none\n", label)
		return
	}
	head := v[:min(len(v), 8)]
	more := ""
	if len(v) > len(head) {
		more = " ..."
	}
	fmt.Fprintf(w, "%-7s dim %d %v%s\n", label, len(v), head, more)
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

// maxListed is how many names or ids a message lists (then how many more there are).
const maxListed = 20

// quoteAll quotes names or ids for a message, each capped (capEcho), at most maxListed of
// them and then "… and N more".
func quoteAll(ss []string) []string {
	out := make([]string, 0, min(len(ss), maxListed+1))
	for i, s := range ss {
		if i == maxListed {
			out = append(out, fmt.Sprintf("… and %d more", len(ss)-maxListed))
			break
		}
		out = append(out, fmt.Sprintf("%q", capEcho(s)))
	}
	return out
}
