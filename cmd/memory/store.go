package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// storeFlags are the flags every command that opens a store shares.
type storeFlags struct {
	dir           string
	embedder      string // model name (in MEMORY_MODELS or the cache), directory, or hash[:DIM]
	reranker      string
	backend       string         // vector index backend
	factory       string         // FAISS factory string
	params        map[string]int // --index-param: build and search parameters of the dense index
	reembed       bool
	rebuildIndex  bool   // rebuild the dense index when --index/--faiss-factory differ from the store's
	precision     string // --vector-precision: float32 or float16 ("": the store's)
	verbose       bool
	lockTimeout   time.Duration // how long to wait for another process's lock (0: the library's 200 ms)
	consistency   string        // --consistency: a cluster store's level ("": QUORUM)
	shards        int           // --shards: shards of the classes a cluster store creates (0: one a node)
	scoring       string        // --bm25-scoring: classic, lucene ("": by analyzer)
	device        deviceFlag
	queryPrefix   optString
	passagePrefix optString
	modelFlags    // --model-preset, --query-max-tokens, --passage-max-tokens (presets.go)
}

// optString is a string flag that remembers whether it was given (so that "" can clear a
// default).
type optString struct {
	v   string
	set bool
}

func (o *optString) String() string { return o.v }
func (o *optString) Set(s string) error {
	o.v, o.set = s, true
	return nil
}

// Type names the value in the help.
func (o *optString) Type() string { return "string" }

// ptr is the flag's value, nil when it was not given.
func (o *optString) ptr() *string {
	if !o.set {
		return nil
	}
	v := o.v
	return &v
}

// The flag groups of storeFlags: each adds one group to a command's flag set, so that a
// command gets the flags it uses and no others.

// addStore adds --store DIR (required: the command checks it with need) and the flags of
// opening a store, --lock-timeout and -v/--verbose.
func (f *storeFlags) addStore(fs *pflag.FlagSet) {
	grouped(fs, groupStore, func() {
		fs.StringVarP(&f.dir, "store", "s", "", "the store directory `DIR` (required), or a Weaviate cluster: weaviate://HOST:PORT[,HOST:PORT...][/PREFIX]")
		f.addOpen(fs)
	})
	completeDirs(fs, "store")
}

// addOpen adds the flags of opening a store without --store: --consistency (a store on a
// Weaviate cluster), --lock-timeout and -v/--verbose.
func (f *storeFlags) addOpen(fs *pflag.FlagSet) {
	grouped(fs, groupStore, func() {
		fs.StringVar(&f.consistency, "consistency", "", "with a weaviate:// store: the consistency `LEVEL` of reads and writes, ONE, QUORUM or ALL (default QUORUM)")
		fs.IntVar(&f.shards, "shards", 0, "with a weaviate:// store: split the collections it creates into `N` shards (default: one a node; 1 keeps BM25 statistics global, as embedded)")
		fs.BoolVarP(&f.verbose, "verbose", "v", false, "verbose logging")
		fs.DurationVar(&f.lockTimeout, "lock-timeout", 0, "wait up to this long for another process that holds the store (readers, for a command that writes; "+
			"a writer still starting, for one that reads: a read beside a running writer goes through it) (default 200ms)")
	})
}

// addEmbedder adds the flags of the embedder: the model, its text handling (prefixes,
// preset, token caps), the device it runs on, and with reembed --reembed (a command that
// opens the store for writing).
func (f *storeFlags) addEmbedder(fs *pflag.FlagSet, reembed bool) {
	grouped(fs, groupEmbedder, func() {
		fs.StringVar(&f.embedder, "embedder", "", "embedding `MODEL`: a name in $MEMORY_MODELS / the model cache, a directory, hash[:DIM], "+
			"openai:MODEL/DIM ($OPENAI_BASE_URL, $OPENAI_API_KEY) or any registered kind "+
			"(needed only to create a store or with --reembed; a store reloads the embedder it was built with)")
		fs.Var(&f.queryPrefix, "query-prefix", "`TEXT` put before each query for an ONNX embedder (default: the --model-preset's, e.g. E5's \"query: \", "+
			"else the folder's config_sentence_transformers.json prompts; \"\" for none)")
		fs.Var(&f.passagePrefix, "passage-prefix", "`TEXT` put before each passage for an ONNX embedder (default: the --model-preset's, e.g. E5's "+
			"\"passage: \", else the folder's prompts; \"\" for none). Part of the embedder's identity")
		f.modelFlags.register(fs)
		f.device = "cpu"
		fs.Var(&f.device, "device", "where dense search and ONNX models run: cpu; cuda (the GPU: FAISS with --index faiss in a "+
			"-tags faiss,faissgpu build, ONNX Runtime through its CUDA provider; an error when ONNX Runtime has none); "+
			"auto (the GPU where available, else the CPU)")
		if reembed {
			fs.BoolVar(&f.reembed, "reembed", false, "re-embed the store when it was made with another embedder")
		}
	})
	completeValuesOrFiles(fs, modelNames("embedder"), "embedder")
	completeValues(fs, deviceValues, "device")
	completeValues(fs, presetValues, "model-preset")
}

// addIndex adds the flags of the dense index: its backend and FAISS factory, rebuilding it
// with another, and the precision of stored vectors.
func (f *storeFlags) addIndex(fs *pflag.FlagSet) {
	grouped(fs, groupIndex, func() {
		fs.StringVar(&f.backend, "index", "", "dense index `BACKEND` (disk, flat, chromem, faiss when built with -tags faiss; default: the store's recorded one, else disk)")
		fs.StringVar(&f.factory, "faiss-factory", "", "FAISS index factory `STRING` (Flat, IVF1024,Flat, HNSW32)")
		fs.StringToIntVar(&f.params, "index-param", nil, "dense index `KEY=N` parameters, comma-separated or repeated: the disk index's nlist "+
			"(inverted lists, set when the store first gets vectors), nprobe (lists a search scans; default nlist/16), probecut "+
			"(percent; at the default nprobe a search scans nprobe/8 lists where those stand apart from the rest; -1: never; set, it applies to a set nprobe too), oversample and prefilter; FAISS's nprobe and efSearch. Search parameters may differ from the recorded ones on any open")
		fs.BoolVar(&f.rebuildIndex, "rebuild-index", false, "rebuild the dense index when --index/--faiss-factory differ from the one the store records "+
			"(a store remembers its index: without --index it uses it; another one is an error without this flag)")
		fs.StringVar(&f.precision, "vector-precision", "", "`PRECISION` store.db keeps vectors in: float32, float16 (half the bytes; exact search then ranks by "+
			"the float16-rounded vectors), or int8 (a scale and one byte a value; each vector is stored once: the disk index keeps "+
			"binary codes and rescores its candidates with store.db's int8 vectors). Set when a store first gets vectors "+
			"(default: the store's recorded one, else float32)")
	})
	backends := vectorstore.Backends()
	if !slices.Contains(backends, vectorstore.FaissBackend) {
		backends = append(backends, vectorstore.FaissBackend)
	}
	completeValues(fs, backends, "index")
	completeValues(fs, precisionValues, "vector-precision")
}

// addReranker adds --reranker, a cross-encoder model.
func (f *storeFlags) addReranker(fs *pflag.FlagSet, usage string) {
	fs.StringVar(&f.reranker, "reranker", "", usage)
	completeValuesOrFiles(fs, modelNames("cross-encoder"), "reranker")
}

// addScoring adds --bm25-scoring.
func (f *storeFlags) addScoring(fs *pflag.FlagSet) {
	fs.StringVar(&f.scoring, "bm25-scoring", "", "BM25 `FORMULA`: classic (textbook, exact lengths) or lucene (Lucene 8's BM25Similarity, Anserini's and "+
		"Pyserini's); default: lucene for collections with the en_lucene analyzer, classic for the others")
	completeValues(fs, scoringValues, "bm25-scoring")
}

// need is the usage error of a command run without --store.
func (f *storeFlags) need() error {
	if f.dir == "" {
		return usagef("--store DIR is required")
	}
	return nil
}

// addCollection adds -c/--collection NAME to fs with usage.
func addCollection(fs *pflag.FlagSet, col *string, usage string) {
	fs.StringVarP(col, "collection", "c", "", usage)
}

// spec is the embedder the flags name (name "" when --embedder is not given).
func (f *storeFlags) spec() embedderSpec {
	return f.modelFlags.apply(embedderSpec{name: f.embedder, queryPrefix: f.queryPrefix.ptr(), passagePrefix: f.passagePrefix.ptr(), device: string(f.device)})
}

// options builds the options of the flags for the store at store: logger, models, index, re-embedding, and
// the resolver that reloads the embedder a store was built with.
func (f *storeFlags) options(store string, stderr io.Writer) ([]memory.Option, error) {
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	gpu := f.device.gpu() && !isClusterStore(store) // on a cluster the GPU runs ONNX models only
	opts := []memory.Option{memory.WithLogger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})))}
	if f.embedder != "" {
		e, err := loadEmbedderSpec(context.Background(), f.spec())
		if err != nil {
			return nil, err
		}
		opts = append(opts, memory.WithEmbedder(e))
	} else {
		spec := f.spec()
		opts = append(opts, memory.WithEmbedderResolver(func(ctx context.Context, id string, dim int) (vectorstore.Embedder, error) {
			return resolveEmbedder(ctx, id, dim, spec)
		}))
	}
	if f.reranker != "" {
		r, err := loadReranker(f.reranker, string(f.device))
		if err != nil {
			return nil, err
		}
		opts = append(opts, memory.WithReranker(r))
	}
	if gpu && f.backend != "faiss" {
		fmt.Fprintf(stderr, "memory: --device %s: the dense index runs on a GPU only with --index faiss (a -tags faiss,faissgpu build); ONNX models still use it\n", f.device)
	}
	if f.backend != "" || f.factory != "" || gpu || len(f.params) > 0 {
		cfg := indexConfig(f.backend, f.factory)
		if err := checkIndexParams(f.params); err != nil {
			return nil, err
		}
		cfg.Params = f.params
		cfg.GPU = gpu
		opts = append(opts, memory.WithIndex(cfg))
	}
	if f.precision != "" {
		opts = append(opts, memory.WithVectorPrecision(memory.VectorPrecision(f.precision)))
	}
	if f.reembed {
		opts = append(opts, memory.WithReEmbed(nil))
	}
	if f.rebuildIndex {
		opts = append(opts, memory.WithIndexRebuild())
	}
	if f.lockTimeout > 0 {
		opts = append(opts, memory.WithLockTimeout(f.lockTimeout))
	}
	if f.scoring != "" {
		opts = append(opts, memory.WithBM25Scoring(f.scoring))
	}
	if f.consistency != "" {
		opts = append(opts, memory.WithConsistency(f.consistency))
	}
	if f.shards != 0 {
		opts = append(opts, memory.WithShards(f.shards))
	}
	return opts, nil
}

// isClusterStore reports whether a --store names a Weaviate cluster (weaviate://...), not
// a directory.
func isClusterStore(store string) bool { return strings.HasPrefix(store, memory.ClusterScheme) }

// checkClusterFlags refuses, naming them, the flags a store on a Weaviate cluster cannot
// honour (Weaviate keeps the vectors in its own index and scores BM25 its own way); on a
// directory it refuses --consistency, which only a cluster has.
func (f *storeFlags) checkClusterFlags(store string) error {
	if !isClusterStore(store) {
		if f.consistency != "" {
			return usagef("--consistency is for a store on a Weaviate cluster (--store weaviate://...), not the directory %s", store)
		}
		if f.shards != 0 {
			return usagef("--shards is for a store on a Weaviate cluster (--store weaviate://...), not the directory %s", store)
		}
		return nil
	}
	for _, c := range []struct {
		set        bool
		flag, what string
	}{
		{f.backend != "" || f.factory != "" || len(f.params) > 0, "--index/--faiss-factory/--index-param", "Weaviate keeps the vectors in its own HNSW index"},
		{f.rebuildIndex, "--rebuild-index", "Weaviate keeps the vectors in its own HNSW index"},
		{f.precision != "" && f.precision != string(memory.Float32), "--vector-precision " + f.precision, "Weaviate stores float32 vectors"},
		{f.reembed, "--reembed", "the cluster cannot re-embed what it holds"},
		{f.scoring != "", "--bm25-scoring", "Weaviate scores BM25 its own way"},
	} {
		if c.set {
			return fmt.Errorf("%w: %s on a store on a Weaviate cluster (%s)", memory.ErrNotSupported, c.flag, c.what)
		}
	}
	return nil
}

// writableOnCluster clears memory.ReadOnly for a store on a cluster: a read-only open is
// how the CLI's read commands share a directory store (its lock); a cluster has no lock to
// share, and the library refuses ReadOnly there. Commands that must not write (serve
// --read-only) say so to their servers, not through the store.
func writableOnCluster(o *memory.Options) { o.ReadOnly = false }

// openExisting opens the existing store at store with opts: a directory with
// memory.OpenExisting (never created); a Weaviate cluster with memory.Open, and, as a
// mistyped directory fails rather than reading an empty store, an address whose class
// prefix has no collection there is memory.ErrStoreNotFound.
func openExisting(store string, opts ...memory.Option) (*memory.Memory, error) {
	if !isClusterStore(store) {
		return memory.OpenExisting(store, opts...)
	}
	m, err := memory.Open(store, append(opts, writableOnCluster)...)
	if err != nil {
		return nil, err
	}
	cols, err := m.Collections(context.Background())
	if err == nil && len(cols) == 0 {
		err = fmt.Errorf("%w: the Weaviate cluster holds no collection of the store %s (none of its class prefix; create one with `memory import --store %s EXPORT.jsonl` or `memory index --store %s FILE...`)",
			memory.ErrStoreNotFound, store, store, store)
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// open opens the existing store the flags describe for a read command (search, get, count,
// serve, eval --store): it never creates a store, and fails with a message naming dir when
// there is none. A store built with an embedder gets it back without --embedder.
func (f *storeFlags) open(dir string, stderr io.Writer, extra ...memory.Option) (*memory.Memory, error) {
	return openStore(f, dir, false, stderr, extra...)
}

// create opens the store in dir, creating it when dir is missing or empty (index).
func (f *storeFlags) create(dir string, stderr io.Writer, extra ...memory.Option) (*memory.Memory, error) {
	return openStore(f, dir, true, stderr, extra...)
}

// openStore is the one place the CLI opens stores; serve uses it through storeFlags.open.
func openStore(f *storeFlags, dir string, create bool, stderr io.Writer, extra ...memory.Option) (*memory.Memory, error) {
	if err := f.checkClusterFlags(dir); err != nil {
		return nil, err
	}
	opts, err := f.options(dir, stderr)
	if err != nil {
		return nil, err
	}
	opts = append(opts, extra...)
	if isClusterStore(dir) {
		if !create {
			m, err := openExisting(dir, opts...)
			return m, cliHint(err)
		}
		m, err := memory.Open(dir, append(opts, writableOnCluster)...)
		return m, cliHint(err)
	}
	if create {
		m, err := memory.Open(dir, opts...)
		return m, cliHint(err)
	}
	if dir == "" {
		return nil, errors.New("no --store given")
	}
	m, err := memory.OpenExisting(dir, opts...)
	if err != nil {
		if errors.Is(err, memory.ErrStoreNotFound) || errors.Is(err, memory.ErrNotAStore) {
			return nil, storeHint(err, dir)
		}
		return nil, cliHint(err)
	}
	return m, nil
}

// analyzerList names the BM25 analyzers for flag help.
func analyzerList() string { return strings.Join(memory.Analyzers(), ", ") }

// cliHint adds the CLI's way out to errors whose text names a library option.
func cliHint(err error) error {
	if errors.Is(err, memory.ErrIndexMismatch) {
		return fmt.Errorf("%w (CLI: leave --index and --faiss-factory out, or pass --rebuild-index)", err)
	}
	if errors.Is(err, memory.ErrAnalyzerMismatch) {
		return fmt.Errorf("%w (CLI: leave --analyzer out to use the recorded one)", err)
	}
	if errors.Is(err, memory.ErrEmbedderMismatch) {
		return fmt.Errorf("%w (pass --reembed to re-embed the store with --embedder, or leave --embedder out to use the store's own)", err)
	}
	return err
}

// readCollection is openCollection for the commands that only read (search, get, count):
// the store is opened read-only, so any number of them share it while no writer has it,
// and while one has it they read through it (memory.ReadOnly).
func (sf *storeFlags) readCollection(name string, stderr io.Writer) (*memory.Memory, *memory.Collection, error) {
	return sf.openCollection(name, stderr, memory.ReadOnly())
}

// openCollection opens the existing store of the flags and its existing collection name,
// for the commands that work on one collection; on an error nothing is left open.
func (sf *storeFlags) openCollection(name string, stderr io.Writer, extra ...memory.Option) (*memory.Memory, *memory.Collection, error) {
	m, err := sf.open(sf.dir, stderr, extra...)
	if err != nil {
		return nil, nil, err
	}
	c, err := openCollection(m, name)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, c, nil
}

// openCollection returns an existing collection of m for a read command ("" = the default
// collection, which always exists); a missing one fails with memory.ErrCollectionNotFound
// and lists the collections there are. serve uses it for --collection.
func openCollection(m *memory.Memory, name string) (*memory.Collection, error) {
	if name == "" {
		return m.Collection(""), nil
	}
	c, err := m.GetCollection(name)
	if err != nil {
		if errors.Is(err, memory.ErrCollectionNotFound) {
			names, _ := m.Collections(context.Background()) // only to name them in the error
			return nil, fmt.Errorf("%w: %q in %s (collections: %s)", memory.ErrCollectionNotFound, capEcho(name), m.Dir(), listNames(names))
		}
		return nil, err
	}
	return c, nil
}

// listNames lists collection names for a message: quoted, each capped (capEcho), at most
// maxListed of them.
func listNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(quoteAll(names), ", ")
}

// isTerminal reports whether w is an interactive terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// deviceFlag is --device: cpu, cuda (or gpu) or auto, checked when the flag is parsed.
type deviceFlag string

func (d *deviceFlag) String() string { return string(*d) }

// Type names the value in the help.
func (d *deviceFlag) Type() string { return "DEVICE" }

func (d *deviceFlag) Set(s string) error {
	switch s {
	case "cpu", "cuda", "gpu", "auto":
		*d = deviceFlag(s)
		return nil
	}
	return fmt.Errorf("%q: want cpu, cuda or auto", s)
}

// gpu reports whether the flag asks for the GPU (cuda, gpu or auto).
func (d deviceFlag) gpu() bool { return d != "" && d != "cpu" }

// storeHint adds to a "no store here" error the command that makes one: in dir itself when
// it is missing or empty, else (dir holds other files, where index would fail too) in a new
// folder inside it.
func storeHint(err error, dir string) error {
	if errors.Is(err, memory.ErrNotAStore) {
		return fmt.Errorf("%w (it holds other files, so no store can be created there: name a new or empty folder, e.g. `memory index --store %s FILE...`)",
			err, filepath.Join(dir, "memory-store"))
	}
	return fmt.Errorf("%w (create one with `memory index --store %s FILE...`)", err, dir)
}
