package main

import (
	"flag"
	"io"
	"log/slog"
	"os"

	"github.com/agentmem/memory"
	"golang.org/x/term"
)

// storeFlags are the flags every command that opens a store shares.
type storeFlags struct {
	dir      string
	embedder string // model name (in MEMORY_MODELS or the cache) or directory
	reranker string
	backend  string // vector index backend
	factory  string // FAISS factory string
	reembed  bool
	verbose  bool
}

func (f *storeFlags) register(fs *flag.FlagSet, needDir bool) {
	if needDir {
		fs.StringVar(&f.dir, "store", "", "store directory (required)")
	}
	fs.StringVar(&f.embedder, "embedder", "", "embedding model: a name in $MEMORY_MODELS / the model cache, or a directory (default: none, BM25 only)")
	fs.StringVar(&f.reranker, "reranker", "", "cross-encoder model: a name or a directory (default: none)")
	fs.StringVar(&f.backend, "index", "", "dense index backend (chromem, flat, faiss when built with -tags faiss)")
	fs.StringVar(&f.factory, "faiss-factory", "", "FAISS index factory string (Flat, IVF1024,Flat, HNSW32)")
	fs.BoolVar(&f.reembed, "reembed", false, "re-embed the store when it was made with another embedder")
	fs.BoolVar(&f.verbose, "v", false, "verbose logging")
}

// open opens the store the flags describe, loading the models they name.
func (f *storeFlags) open(dir string, stderr io.Writer, extra ...memory.Option) (*memory.Memory, error) {
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	opts := []memory.Option{memory.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))}
	if f.embedder != "" {
		e, err := loadEmbedder(f.embedder)
		if err != nil {
			return nil, err
		}
		opts = append(opts, memory.WithEmbedder(e))
	}
	if f.reranker != "" {
		r, err := loadReranker(f.reranker)
		if err != nil {
			return nil, err
		}
		opts = append(opts, memory.WithReranker(r))
	}
	if f.backend != "" || f.factory != "" {
		cfg := indexConfig(f.backend, f.factory)
		opts = append(opts, memory.WithIndex(cfg))
	}
	if f.reembed {
		opts = append(opts, memory.WithReEmbed(nil))
	}
	return memory.Open(dir, append(opts, extra...)...)
}

// isTerminal reports whether w is an interactive terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
