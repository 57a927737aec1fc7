// Command vecgen writes the vectors of a JSONL corpus (BEIR or memory's own lines) as a
// matrix file aligned with it, row i for line i+1, as a GPU job computing embeddings
// elsewhere would: for measuring `memory index --vectors` against embedding in the store.
// It embeds with the model-free hash embedder (hash:DIM), as the store embeds a passage
// (title, a newline, text); -format npy or fvecs; -embedding-jsonl writes the corpus again
// with each line's vector in an "embedding" field instead.
//
//	go run ./bench/vecgen -in corpus.jsonl -dim 384 -out corpus.npy
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/vecfile"
	"github.com/agentmem/memory/vectorstore"
)

func main() {
	in := flag.String("in", "", "JSONL corpus")
	out := flag.String("out", "", "output file")
	dim := flag.Int("dim", 384, "dimension of the hash embedder")
	format := flag.String("format", "npy", "npy or fvecs")
	embJSONL := flag.Bool("embedding-jsonl", false, "write JSONL lines with an \"embedding\" field instead of a matrix")
	flag.Parse()
	if err := run(*in, *out, *dim, vecfile.Format(*format), *embJSONL); err != nil {
		fmt.Fprintln(os.Stderr, "vecgen:", err)
		os.Exit(1)
	}
}

func run(in, out string, dim int, format vecfile.Format, embJSONL bool) error {
	var lines [][]byte
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	f.Close()
	if err := sc.Err(); err != nil {
		return err
	}
	return atomicfile.Write(out, atomicfile.Options{}, func(o io.Writer) error {
		return writeVectors(o, lines, format, dim, embJSONL)
	})
}

// writeVectors writes the hashing embedder's vector of each JSONL line to o: a matrix of
// format, or the lines again with an "embedding" field (embJSONL).
func writeVectors(o io.Writer, lines [][]byte, format vecfile.Format, dim int, embJSONL bool) error {
	bw := bufio.NewWriterSize(o, 1<<20)
	var w *vecfile.Writer
	var err error
	if !embJSONL {
		if w, err = vecfile.NewWriter(bw, format, int64(len(lines)), dim); err != nil {
			return err
		}
	}
	emb := vectorstore.NewHashEmbedder(dim)
	for i, line := range lines {
		var j map[string]any
		if err := json.Unmarshal(line, &j); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		title, _ := j["title"].(string)
		text, _ := j["text"].(string)
		t := text
		if title != "" {
			t = title + "\n" + text
		}
		v, err := emb.Embed(context.Background(), []string{t})
		if err != nil {
			return err
		}
		if embJSONL {
			j["embedding"] = v[0]
			b, err := json.Marshal(j)
			if err != nil {
				return err
			}
			bw.Write(append(b, '\n'))
			continue
		}
		if err := w.Write(v[0]); err != nil {
			return err
		}
	}
	if w != nil {
		if err := w.Close(); err != nil {
			return err
		}
	}
	return bw.Flush()
}
