package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/vecfile"
	"github.com/agentmem/memory/vectorstore"
)

// Precomputed vectors for `memory index`: --vectors (a matrix file aligned with one JSONL
// file) or each line's "embedding" field, recorded under the model --embedder-id names.

// openAlignedVectors opens the --vectors file and checks that it can be aligned with the
// run's files: one .jsonl file, one row per line.
func openAlignedVectors(path string, files []string, scan fileScan, code string) (*vecfile.Reader, error) {
	if code != "" || len(files) != 1 || !strings.EqualFold(filepath.Ext(files[0]), ".jsonl") {
		return nil, fmt.Errorf("--vectors %s: give exactly one .jsonl file to align it with (row i is the vector of line i+1), not %d files", path, len(files))
	}
	var (
		vr  *vecfile.Reader
		err error
	)
	if path == "-" { // a stream on stdin: an .npy or FAISS flat file (their magic says which)
		vr, err = vecfile.NewReader(os.Stdin, -1, "stdin")
	} else {
		vr, err = vecfile.Open(path)
	}
	if err != nil {
		return nil, err
	}
	if vr.Rows() == vecfile.MaxRows {
		return vr, nil // an .fvecs stream: its rows are counted as they are read (checkVectorsEnd)
	}
	if vr.Rows() != int64(scan.docs[0]) {
		vr.Close()
		return nil, fmt.Errorf("%w: %s has %d rows, %s has %d lines (row i is the vector of line i+1)",
			vecfile.ErrRowCount, path, vr.Rows(), files[0], scan.docs[0])
	}
	return vr, nil
}

// importEmbedder is the embedder option of a run with --embedder-id: the named model when
// it loads (its dimension must be the vectors'), else the identity of its vectors
// (vectorstore.VectorsOnly), whose dimension comes from --vectors or the first JSONL
// "embedding" field.
func importEmbedder(ctx context.Context, sf *storeFlags, name string, vr *vecfile.Reader, files []string, stderr io.Writer) ([]memory.Option, error) {
	if name == "" {
		return nil, nil
	}
	if sf.embedder != "" {
		return nil, errors.New("--embedder and --embedder-id name the same thing: give one")
	}
	dim := 0
	if vr != nil {
		dim = vr.Dim()
	} else {
		var err error
		if dim, err = firstEmbeddingDim(files); err != nil {
			return nil, err
		}
	}
	spec := sf.spec()
	spec.name = name
	e, err := loadEmbedderSpec(ctx, spec)
	if err == nil {
		if dim > 0 && e.Dim() != dim {
			return nil, fmt.Errorf("%w: model %q embeds in %d dimensions, the precomputed vectors have %d", vecfile.ErrDim, name, e.Dim(), dim)
		}
		return []memory.Option{memory.WithEmbedder(e)}, nil
	}
	if dim == 0 {
		return nil, fmt.Errorf("--embedder-id %s: the model cannot be loaded (%v), and no precomputed vector gives the dimension (--vectors, or a JSONL \"embedding\" field)", name, err)
	}
	fmt.Fprintf(stderr, "memory: model %q is not loaded (%v): its %d-dimensional vectors are recorded under that name; searches use BM25 until it can be loaded\n", name, err, dim)
	return []memory.Option{memory.WithEmbedder(vectorstore.NewVectorsOnly(name, dim))}, nil
}

// firstEmbeddingDim is the length of the first "embedding" field of the .jsonl files (0:
// none).
func firstEmbeddingDim(files []string) (int, error) {
	for _, f := range files {
		if !strings.EqualFold(filepath.Ext(f), ".jsonl") {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			return 0, err
		}
		dim := 0
		stop := errors.New("found")
		err = readLines(fh, func(_ int, line []byte, _ bool) error {
			if !bytes.Contains(line, []byte(`"embedding"`)) {
				return nil
			}
			var j struct {
				Embedding []float32 `json:"embedding"`
			}
			if json.Unmarshal(line, &j) == nil && len(j.Embedding) > 0 {
				dim = len(j.Embedding)
				return stop
			}
			return nil
		})
		fh.Close()
		if err != nil && err != stop {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		if dim > 0 {
			return dim, nil
		}
	}
	return 0, nil
}

// hasQueryModel reports whether m can embed queries: an embedder that is not only the
// identity of imported vectors.
func hasQueryModel(m *memory.Memory) bool {
	e := m.Embedder()
	_, vo := e.(*vectorstore.VectorsOnly)
	return e != nil && !vo
}

// describeEmbedder names an embedder in errors.
func describeEmbedder(e vectorstore.Embedder) string {
	if e == nil {
		return "none"
	}
	return fmt.Sprintf("%q (dimension %d)", e.ID(), e.Dim())
}

// checkVectorsEnd is the end of an aligned vector stream once every line was read: it
// must hold no row more.
func checkVectorsEnd(vr *vecfile.Reader, lines int) error {
	if vr == nil {
		return nil
	}
	if _, err := vr.Next(nil); err != io.EOF {
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: %s has more rows than the %d lines of its .jsonl (row i is the vector of line i+1)", vecfile.ErrRowCount, vr.Path(), lines)
	}
	return nil
}
