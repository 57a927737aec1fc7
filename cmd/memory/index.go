package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/beir"
	"github.com/agentmem/memory/internal/parallel"
	"github.com/agentmem/memory/internal/vecfile"
	"github.com/agentmem/memory/searchr1"
	"github.com/agentmem/memory/vectorstore"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// defaultIndexBatch is the documents of one write of memory index: at 10,000 (two BM25
// segments of 5,000 built at once) a 1M-passage ingest takes 13 % less CPU than at 4,096
// (fewer, larger segments to merge; fewer transactions), for about 250 MB more memory.
const defaultIndexBatch = 10000

// indexOptions are the flags of memory index beside the store's.
type indexOptions struct {
	col, analyzer, code, vectors, embedderID, compatName string
	pprofAddr                                            string // --pprof (hidden)
	batch                                                int
	mappedMB                                             int64
	autoCode, sync, strict, chunk, compact               bool
	chunkSet                                             bool // --chunk was given
}

// compactMin is the least documents a memory index run stores before it compacts the
// collection's BM25 index (memory.Collection.Compact): a bulk load leaves tens of segments
// that every query pays for; a small update is not worth rewriting the index.
var compactMin = 10000 // a variable for tests

func newIndexCmd() *cobra.Command {
	var sf storeFlags
	var o indexOptions
	var c *cobra.Command
	c = newCommand("index", "add documents from .txt/.md/.jsonl, HTML, PDF and code files or folders to a store",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			o.chunkSet = c.Flags().Changed("chunk")
			return runIndex(ctx, &sf, o, args, stdout, stderr)
		})
	fs := c.Flags()
	sf.addStore(fs)
	fs.Lookup("verbose").Usage = "verbose logging, and every file skipped listed with its reason"
	sf.addEmbedder(fs, true)
	sf.addIndex(fs)
	addCollection(fs, &o.col, "the collection `C` (default: the default collection; created on the first write)")
	fs.StringVar(&o.analyzer, "analyzer", "", "BM25 analyzer of a new store (with --collection: of a new collection), recorded there; "+
		"another than the recorded one is an error (default en; "+analyzerList()+")")
	fs.IntVar(&o.batch, "batch", defaultIndexBatch, "documents per write (one transaction; a large batch builds its BM25 segments on all cores)")
	fs.StringVar(&o.code, "code", "", "index the source tree `DIR`: chunk it with tree-sitter (respects .gitignore); PATH arguments are then not read")
	fs.BoolVar(&o.autoCode, "auto-code", true, "chunk the code files found among PATH (the languages of memory chunk: .go, .py, .js, .ts, .java, .rs, .c, .cpp, .cs, .rb...) "+
		"with tree-sitter, a document per chunk as --code makes; --auto-code=false skips them (and says so). "+
		"HTML files (.html, .htm, .xhtml) are read as their title and visible text, PDF files as a document per page with text; "+
		"every file not read is reported at the end, grouped by type and reason (-v: each one)")
	fs.BoolVar(&o.sync, "sync", false, "also delete the documents of sources under the given folders that are gone")
	fs.BoolVar(&o.strict, "strict", false, "exit with status 1 when any document was skipped")
	fs.BoolVar(&o.compact, "compact", true, fmt.Sprintf("after a run that stored at least %d documents, merge the collection's BM25 index into one segment "+
		"(first queries about twice as fast after a bulk load, a smaller index; costs about a fifth of the indexing time); --compact=false skips it", compactMin))
	fs.Int64Var(&o.mappedMB, "mapped-mb", 1024, "keep at most about this many MiB of index files mapped into memory while indexing (Linux; 0: no bound): "+
		"the BM25 index's merges read whole segments, whose pages stay in the page cache either way")
	fs.StringVar(&o.vectors, "vectors", "", "precomputed vectors aligned with the one .jsonl file given (row i is the vector of line i+1): "+
		"a .npy (float32 or float16, 2-D, C order), an .fvecs file, or a FAISS IndexFlatIP/IndexFlatL2 file (faiss.write_index); "+
		"a named pipe is read as it streams, and \"-\" reads an .npy or FAISS file from stdin. "+
		"Without it, a JSONL line's \"embedding\" field (an array of numbers) is its vector")
	fs.StringVar(&o.embedderID, "embedder-id", "", "the `MODEL` that made the precomputed vectors (a name in $MEMORY_MODELS / the model cache, or hash:DIM): "+
		"queries are embedded by it; when it cannot be loaded now, the vectors are recorded under this name "+
		"and searches use BM25 until it can")
	fs.StringVar(&o.compatName, "compat", "", "search-r1: index a Search-R1 / pyserini corpus ({\"id\", \"contents\"} rows) to be served with serve --compat search-r1: "+
		"each row's contents stored byte for byte as its text (no title split off), rows not chunked (unless --chunk), a new store's or "+
		"collection's analyzer en_lucene (Lucene's EnglishAnalyzer, as pyserini), and with --embedder passages embedded "+
		"whole as the original's index builder does (E5: \"passage: \" + contents, at most 256 tokens)")
	fs.BoolVar(&o.chunk, "chunk", true, "split long prose documents into chunks (over 1,000 non-space characters); --chunk=false stores each whole. "+
		"Default: chunk, except a passage corpus (every file .jsonl of {\"id\", \"contents\"} rows) or with --compat search-r1")
	fs.StringVar(&o.pprofAddr, "pprof", "", "serve Go's profiler at http://`ADDR`/debug/pprof/ while the run lasts (a bulk load's heap and CPU)")
	fs.MarkHidden("pprof") //nolint:errcheck // the flag exists
	completeValues(fs, memory.Analyzers(), "analyzer")
	completeValues(fs, compatValues, "compat")
	completeValuesOrFiles(fs, modelNames("embedder"), "embedder-id")
	completeDirs(fs, "code")
	return c
}

func runIndex(ctx context.Context, sf *storeFlags, o indexOptions, args []string, stdout, stderr io.Writer) error {
	compat, err := searchr1.ParseCompat(o.compatName)
	if err != nil {
		return usagef("--compat: %v", err)
	}
	if err := sf.need(); err != nil {
		return err
	}
	cluster := isClusterStore(sf.dir)
	if len(args) == 0 && o.code == "" {
		return usagef("nothing to index: give PATHs (files or folders) or --code DIR")
	}
	if o.batch <= 0 {
		o.batch = defaultIndexBatch
	}
	if o.pprofAddr != "" {
		stop, err := listenProfiler(o.pprofAddr, stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	defer ingestGC()()
	rep := &skipReport{}
	files, err := collectRoots(args, o.sync, walkOptions{autoCode: o.autoCode, store: sourceOf(sf.dir)}, rep, stderr)
	if err != nil {
		return err
	}
	if o.code == "" {
		defer rep.write(stderr, sf.verbose) // at the end of the run, whatever its outcome
	}
	if o.code == "" && len(files) == 0 && !o.sync {
		return fmt.Errorf("no file to index under %v (.txt, .md, .jsonl, .html, .pdf and code files are read)", args)
	}
	scan, err := scanFiles(files)
	if err != nil {
		return err
	}
	cs := compatSettings(compat, sf, o.analyzer, o.col, o.chunkSet, o.chunk, o.code != "", scan, stderr)
	var vr *vecfile.Reader
	if o.vectors != "" {
		if vr, err = openAlignedVectors(o.vectors, files, scan, o.code); err != nil {
			return err
		}
		defer vr.Close()
	}
	extra, err := importEmbedder(ctx, sf, o.embedderID, vr, files, stderr)
	if err != nil {
		return err
	}
	if o.analyzer != "" && o.col == "" {
		extra = append(extra, memory.WithAnalyzer(o.analyzer))
	}
	if o.mappedMB > 0 && !cluster { // a cluster maps no file
		mapped := o.mappedMB << 20
		extra = append(extra, func(mo *memory.Options) { mo.MappedResidentBytes = mapped })
	}
	extra = append(extra, cs.options...)
	m, err := sf.create(sf.dir, stderr, extra...)
	if err != nil {
		return err
	}
	defer m.Close()
	c := m.Collection(o.col)
	if o.analyzer != "" && o.col != "" {
		if c, err = m.CreateCollection(o.col, memory.WithCollectionAnalyzer(o.analyzer)); err != nil {
			return err
		}
	}
	if c, err = cs.collection(m, c, o.col, stderr); err != nil {
		return err
	}
	if o.code != "" {
		return indexCode(ctx, c, o.code, o.batch, stdout, stderr)
	}
	ix := &indexer{ctx: ctx, c: c, batch: o.batch, stderr: stderr, seen: newIDSeen(), vecs: vr, verbatim: cs.verbatim, skips: rep}
	if e := m.Embedder(); vr != nil && (e == nil || e.Dim() != vr.Dim()) {
		return fmt.Errorf("%w: %s holds vectors of dimension %d; the store's embedder is %s (name the model that made them with --embedder-id)",
			vecfile.ErrDim, vr.Path(), vr.Dim(), describeEmbedder(e))
	}
	ix.vectorsOnly, _ = m.Embedder().(*vectorstore.VectorsOnly)
	// (On a cluster, listing the sources reads every document's record: Collection.Sources.)
	if ix.existing, err = existingSources(ctx, c); err != nil {
		return err
	}
	ix.prog = newProgress(stderr, scan.total, "indexing")
	ix.prog.stored = func() int { return ix.stored }
	start := time.Now()
	if err := ix.indexFiles(files, scan); err != nil {
		ix.reportFailure()
		return err
	}
	if err := checkVectorsEnd(vr, scan.total); err != nil {
		return err
	}
	if err := ix.removeStale(); err != nil {
		ix.reportFailure()
		return err
	}
	removed := 0
	if o.sync {
		if removed, err = ix.syncRoots(args, files, rep.unreadable()); err != nil {
			ix.reportFailure()
			return err
		}
	}
	el := time.Since(start)
	fmt.Fprintf(stdout, "stored %d documents from %d files into %q in %s (%.0f docs/s); skipped %d; removed %d stale documents of re-indexed sources",
		ix.stored, len(files), c.Name(), el.Round(time.Millisecond), float64(ix.stored)/max(el.Seconds(), 1e-9), ix.skipped, ix.replaced)
	if o.sync {
		fmt.Fprintf(stdout, "; removed %d documents of %d vanished sources", removed, ix.vanished)
	}
	n, err := c.Count(ctx)
	if err != nil {
		fmt.Fprintln(stdout)
		return err
	}
	fmt.Fprintf(stdout, "; collection now holds %d\n", n)
	if o.compact && ix.stored >= compactMin && !cluster { // Weaviate merges its own segments
		// The run's id set (tens of bytes an id: 0.86 GB at 21M) is not read once the
		// stale documents are gone: the collector may take it back during the compaction.
		ix.seen = nil
		t := time.Now()
		if err := c.Compact(ctx); err != nil {
			return fmt.Errorf("compact the BM25 index (every document is stored; the index answers as it is): %w", err)
		}
		fmt.Fprintf(stdout, "compacted the BM25 index of %q in %s\n", c.Name(), time.Since(t).Round(time.Millisecond))
	}
	return ix.outcome(ix.scan.total, o.sync, o.strict)
}

// reportFailure tells, on stderr, what a run that fails has stored and what it has not:
// the documents it acknowledged are durable (counted, and the last of them named), the
// first one not stored is named, and no document of the collection was removed before the
// stale ones (removeStale), once every new document was stored. Running the same command
// again finishes the job.
func (ix *indexer) reportFailure() {
	fmt.Fprintf(ix.stderr, "index failed: %d documents were stored (durably) before the error; %d skipped (reported above); %d not stored.\n",
		ix.stored, ix.skipped, max(ix.scan.total-ix.stored-ix.skipped, 0))
	if ix.lastStored.id != "" {
		fmt.Fprintf(ix.stderr, "  last document stored:      %q (%s)\n", capEcho(ix.lastStored.id), ix.where(ix.lastStored.loc))
	} else {
		fmt.Fprintf(ix.stderr, "  last document stored:      none\n")
	}
	switch {
	case ix.removing:
		fmt.Fprintf(ix.stderr, "  every document was stored; removing the stale documents of re-indexed sources failed after %d were removed.\n", ix.replaced)
	case len(ix.pending) > 0:
		p := ix.pending[0]
		fmt.Fprintf(ix.stderr, "  first document not stored: %q (%s)\n", capEcho(p.doc.ID), ix.where(p.loc))
	case len(ix.files) > 0:
		fmt.Fprintf(ix.stderr, "  first document not stored: the one after the last stored (reading %s failed)\n", ix.files[ix.file])
	}
	if !ix.removing {
		fmt.Fprintf(ix.stderr, "  nothing was removed: each document stored replaced its earlier version (same id) in place, and every other document stays;\n"+
			"  the stale documents of re-indexed sources (ids their files no longer hold) are removed only once every new document is stored.\n")
	}
	fmt.Fprintf(ix.stderr, "  to resume: run the same memory index command again; it stores every document again in place (same ids: no duplicates), the ones not stored included, then removes the stale ones.\n")
}

// noteStored records the last of docs (stored, in order) as the last document stored.
func (ix *indexer) noteStored(docs []pendingDoc) {
	if len(docs) > 0 {
		d := docs[len(docs)-1]
		ix.lastStored.id, ix.lastStored.loc = d.doc.ID, d.loc
	}
}

// collectRoots lists the files to index under the given roots (collectFiles), and reports
// the others to rep. With sync, a root that is gone as a whole is reported and skipped:
// --sync removes what was indexed from it.
func collectRoots(roots []string, sync bool, wo walkOptions, rep *skipReport, stderr io.Writer) ([]string, error) {
	var files []string
	for _, p := range roots {
		found, err := collectFiles(p, wo, rep)
		if err != nil && sync && errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "sync: %s does not exist\n", p)
			continue
		}
		if err != nil {
			return nil, err
		}
		files = append(files, found...)
	}
	return files, nil
}

// indexFiles indexes every file, in batches of ix.batch documents, each one transaction
// that upserts them. Nothing is removed meanwhile: a document whose id was stored replaces
// its earlier version in place, in the transaction that stores it (wherever its earlier
// version came from), and the stale documents of the re-indexed sources go only once every
// new document is stored (removeStale). So a run stopped at any point leaves every id that
// the collection held or the run acknowledged, in its earlier or its new version.
func (ix *indexer) indexFiles(files []string, scan fileScan) error {
	ix.files, ix.scan = files, scan
	for i := range files {
		if err := ix.indexFile(i); err != nil {
			return err
		}
	}
	if err := ix.flushBatch(); err != nil {
		return err
	}
	ix.prog.finish()
	return nil
}

// maxReplaceSources caps the sources one filter names (the items of its $in): --sync's
// deletions, and the filter of removeStale's scan.
const maxReplaceSources = 1000

// claim records the sources of srcs that the collection held when the run began as
// re-indexed: their documents that the run does not store again are stale.
func (ix *indexer) claim(srcs []string) {
	for _, s := range srcs {
		if ix.existing[s] && !ix.cleared[s] {
			if ix.cleared == nil {
				ix.cleared = map[string]bool{}
			}
			ix.cleared[s] = true
		}
	}
}

// staleBatch is how many stale documents removeStale removes in one transaction,
// stalePage how many documents it reads at a time, and staleHeld how many stale ids it
// holds before it removes them: a removal changes the index, whose list of a source's
// documents the next page then computes again (O(documents of the sources)), so removing
// every staleBatch ids as they were found made a run with millions of stale documents
// quadratic.
const (
	staleBatch = 10000
	stalePage  = 2048
	staleHeld  = 1 << 20
)

// removeStale removes, once every document of the run is stored, the stale documents of
// the re-indexed sources: those the collection holds under a re-indexed source whose id
// the run did not read (an id the run read and the store rejected keeps its earlier
// version). It reads the collection once, in id order (Find), and removes them by id,
// staleBatch a transaction: a run with at most that many removes them in one, so a
// kill leaves each source with all of its stale documents or none of them; past that, a
// kill between two transactions leaves the rest to the next run, which removes them. A
// document moved to another source was stored under it already, and is not stale. The
// memory it takes is a page and up to staleHeld stale ids, beside the run's ids (idSeen).
func (ix *indexer) removeStale() error {
	if len(ix.cleared) == 0 {
		return nil
	}
	ix.removing = true
	opts := memory.FindOptions{Limit: stalePage}
	if len(ix.cleared) <= maxReplaceSources { // else every document is read, and its source looked up
		srcs := make([]string, 0, len(ix.cleared))
		for s := range ix.cleared {
			srcs = append(srcs, s)
		}
		slices.Sort(srcs)
		opts.Where = sourcesIn(srcs)
	}
	var stale []string
	remove := func() error {
		for len(stale) > 0 {
			batch := stale[:min(len(stale), staleBatch)]
			if err := ix.c.Delete(ix.ctx, batch...); err != nil {
				return fmt.Errorf("removing %d stale documents of re-indexed sources (%d removed before): %w", len(batch), ix.replaced, err)
			}
			ix.replaced += len(batch)
			stale = stale[len(batch):]
			ix.prog.staleRemoved(ix.replaced)
		}
		stale = nil
		return nil
	}
	for {
		page, err := ix.c.Find(ix.ctx, opts)
		if err != nil {
			return fmt.Errorf("listing the documents of re-indexed sources: %w", err)
		}
		for _, d := range page {
			if ix.cleared[d.Source] && !ix.seen.has(d.ID) {
				stale = append(stale, d.ID)
			}
		}
		if len(page) < stalePage {
			break
		}
		opts.After = page[len(page)-1].ID
		if len(stale) >= staleHeld {
			if err := remove(); err != nil {
				return err
			}
		}
	}
	if err := remove(); err != nil {
		return err
	}
	ix.removing = false
	return nil
}

// sourcesIn is the filter of the documents of sources.
func sourcesIn(sources []string) memory.Where {
	in := make([]any, len(sources))
	for i, s := range sources {
		in[i] = s
	}
	return memory.Where{"source": map[string]any{"$in": in}}
}

// outcome is the error that sets the exit status of a run that indexed total documents:
// nothing stored (unless only syncing), or anything skipped with --strict.
func (ix *indexer) outcome(total int, sync, strict bool) error {
	switch {
	case ix.stored == 0 && total > 0:
		return fmt.Errorf("nothing stored: all %d documents were skipped", ix.skipped)
	case ix.stored == 0 && !sync:
		return errors.New("nothing stored")
	case strict && ix.skipped > 0:
		return fmt.Errorf("%d documents skipped (--strict)", ix.skipped)
	}
	return nil
}

// docLoc is where a document came from: a file of the run and a line (0 for a whole file).
type docLoc struct {
	file, line int
}

// pendingDoc is a document waiting for the next write, with its origin.
type pendingDoc struct {
	doc memory.Document
	loc docLoc
}

// indexer writes documents in batches and reports each bad one with its file and line.
type indexer struct {
	ctx      context.Context
	c        *memory.Collection
	batch    int
	stderr   io.Writer
	prog     *progress
	files    []string
	file     int             // index in files of the file being read
	seen     *idSeen         // ids read in this run
	existing map[string]bool // sources the collection held when the run began
	cleared  map[string]bool // the sources of existing that this run re-indexes (claim)
	pending  []pendingDoc

	vecs        *vecfile.Reader          // --vectors: row i is the vector of line i+1 of the one file
	vectorsOnly *vectorstore.VectorsOnly // the store's embedder has no model: every document needs its vector
	verbatim    bool                     // --compat search-r1: a {"id", "contents"} row's contents are its text, byte for byte
	skips       *skipReport              // the files skipped, for the summary at the end

	scan     fileScan
	removing bool // removeStale is under way (every document is stored)

	badUTF8     int // lines of the file being read that held invalid UTF-8 (replaced by U+FFFD)
	badUTF8Line int // the first of them

	stored, skipped, replaced, vanished int
	lastStored                          struct {
		id  string
		loc docLoc
	} // the last document acknowledged (for the failure report)
}

func (ix *indexer) where(l docLoc) string {
	if l.line == 0 {
		return ix.files[l.file]
	}
	return fmt.Sprintf("%s:%d", ix.files[l.file], l.line)
}

// skip reports a document that is not stored (and counts it as done for the progress).
func (ix *indexer) skip(l docLoc, format string, args ...any) {
	ix.report(l, format, args...)
	if ix.prog != nil {
		ix.prog.add(1)
	}
}

// report reports a document that is not stored.
func (ix *indexer) report(l docLoc, format string, args ...any) {
	ix.skipped++
	fmt.Fprintf(ix.stderr, "skip %s: %s\n", ix.where(l), fmt.Sprintf(format, args...))
}

// existingSources returns the sources a collection holds (none when it does not exist).
func existingSources(ctx context.Context, c *memory.Collection) (map[string]bool, error) {
	srcs, err := c.Sources(ctx)
	if errors.Is(err, memory.ErrCollectionNotFound) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(srcs))
	for _, s := range srcs {
		out[s] = true
	}
	return out, nil
}

// sourceOf is the source key of a file: its absolute, cleaned, slash-separated path.
func sourceOf(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return filepath.ToSlash(filepath.Clean(path))
}

// add queues a document read from l, after the run-wide checks.
func (ix *indexer) add(d memory.Document, l docLoc) error {
	if d.ID == "" {
		ix.skip(l, "no id")
		return nil
	}
	if d.Title == "" && strings.TrimSpace(d.Text) == "" {
		ix.skip(l, "document %q has no text", capEcho(d.ID))
		return nil
	}
	if first, dup := ix.seen.add(d.ID, l); dup {
		ix.skip(l, "duplicate id %q (first read at %s)", capEcho(d.ID), ix.where(first))
		return nil
	}
	ix.pending = append(ix.pending, pendingDoc{d, l})
	if len(ix.pending) >= ix.batch {
		return ix.flushBatch()
	}
	return nil
}

// perDocument reports whether err is about one document (skip it) rather than the store.
func perDocument(err error) bool {
	for _, e := range []error{memory.ErrEmptyID, memory.ErrEmptyText, memory.ErrInvalidUTF8, memory.ErrTooLarge,
		memory.ErrInvalidMetadata, memory.ErrDuplicateID, memory.ErrBadVector, memory.ErrInvalidOption} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// pendingDocs are the documents of the pending batch.
func (ix *indexer) pendingDocs() []memory.Document {
	docs := make([]memory.Document, len(ix.pending))
	for i, p := range ix.pending {
		docs[i] = p.doc
	}
	return docs
}

// flushBatch upserts the pending documents in one transaction, or one by one when the
// store rejects the batch for one document's sake.
func (ix *indexer) flushBatch() error {
	if len(ix.pending) == 0 {
		return nil
	}
	docs := ix.pendingDocs()
	err := ix.c.Upsert(ix.ctx, docs...)
	switch {
	case err == nil:
		ix.stored += len(docs)
		ix.noteStored(ix.pending)
		ix.prog.add(len(docs))
	case perDocument(err):
		if err := ix.upsertEach(); err != nil {
			return err
		}
	default:
		if errors.Is(err, memory.ErrIndexUpdate) { // stored; the index catches up on the next open
			ix.stored += len(docs)
			ix.noteStored(ix.pending)
			ix.pending = ix.pending[:0]
		}
		return err
	}
	ix.pending = ix.pending[:0]
	return nil
}

// upsertEach upserts the pending documents one by one, skipping and reporting those the
// store rejects (a rejected document keeps its earlier version, if any).
func (ix *indexer) upsertEach() error {
	for i, p := range ix.pending {
		if err := ix.c.Upsert(ix.ctx, p.doc); err != nil {
			if errors.Is(err, memory.ErrIndexUpdate) {
				ix.stored++
				ix.noteStored(ix.pending[i : i+1])
				i++
			}
			if !perDocument(err) {
				ix.pending = ix.pending[i:] // what is not stored (the failure report names the first)
				return err
			}
			ix.report(p.loc, "%v", err)
			continue
		}
		ix.stored++
		ix.noteStored(ix.pending[i : i+1])
	}
	ix.prog.add(len(ix.pending))
	ix.pending = ix.pending[:0]
	return nil
}

// syncRoots deletes the documents of sources under roots (folders, or files given
// directly) that this run did not index, but for those under the unreadable paths (a
// folder or file that could not be read this time keeps its documents).
func (ix *indexer) syncRoots(roots, indexed, unreadable []string) (int, error) {
	keep := make(map[string]bool, len(indexed))
	for _, f := range indexed {
		keep[sourceOf(f)] = true
	}
	var held []string
	for _, u := range unreadable {
		held = append(held, sourceOf(u))
	}
	var dirs []string
	for _, r := range roots {
		dirs = append(dirs, sourceOf(r))
	}
	var gone []string
	for s := range ix.existing {
		if keep[s] || ix.cleared[s] || slices.ContainsFunc(held, func(h string) bool { return s == h || strings.HasPrefix(s, h+"/") }) {
			continue
		}
		for _, d := range dirs {
			if s == d || strings.HasPrefix(s, strings.TrimSuffix(d, "/")+"/") {
				gone = append(gone, s)
				fmt.Fprintf(ix.stderr, "sync: %s is gone; deleting its documents\n", s)
				break
			}
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	ix.vanished = len(gone)
	// At most maxReplaceSources a transaction, within the filter caps (memory.MaxFilterInItems):
	// a kill between two leaves some vanished sources still to delete by the next --sync.
	slices.Sort(gone)
	n := 0
	for i := 0; i < len(gone); i += maxReplaceSources {
		k, err := ix.c.DeleteWhere(ix.ctx, sourcesIn(gone[i:min(i+maxReplaceSources, len(gone))]))
		n += k
		if err != nil {
			return n, fmt.Errorf("--sync: %d documents of vanished sources deleted before: %w", n, err)
		}
	}
	return n, nil
}

// maxLineBytes caps one JSONL line; a longer line is skipped.
const maxLineBytes = 64 << 20

// fileScan is what a first pass over the files finds: how many documents each holds at
// most and the sources its documents name.
type fileScan struct {
	total int
	docs  []int      // per file: documents at most (a .jsonl file: its lines)
	srcs  [][]string // per file: its source, then the distinct sources its lines name
	// passages: every file is a .jsonl file whose first line is a passage row ({"id",
	// "contents"}, no "text"): a Search-R1 / pyserini passage corpus.
	passages bool
}

// scanFiles counts the documents the files hold at most (for the progress display and
// the failure report) and lists the sources each file's documents name (the re-indexed
// sources: see claim).
func scanFiles(files []string) (fileScan, error) {
	sc := fileScan{docs: make([]int, len(files)), srcs: make([][]string, len(files)), passages: len(files) > 0}
	for i, f := range files {
		src := sourceOf(f)
		sc.srcs[i] = []string{src}
		if strings.ToLower(filepath.Ext(f)) != ".jsonl" {
			sc.docs[i] = 1
			sc.total++
			sc.passages = false
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			return fileScan{}, err
		}
		seen := map[string]bool{src: true}
		n := 0
		first := true
		err = readLines(fh, func(_ int, line []byte, _ bool) error {
			n++
			if first && len(bytes.TrimSpace(line)) > 0 {
				first = false
				sc.passages = sc.passages && isPassageRow(line)
			}
			if s := lineSource(line); s != "" && !seen[s] {
				seen[s] = true
				sc.srcs[i] = append(sc.srcs[i], s)
			}
			return nil
		})
		fh.Close()
		if err != nil {
			return fileScan{}, fmt.Errorf("%s: %w", f, err)
		}
		if first {
			sc.passages = false // no document line
		}
		sc.docs[i] = n
		sc.total += n
	}
	return sc, nil
}

// isPassageRow reports whether a JSONL line is a Search-R1 / pyserini passage row: a
// JSON object with a "contents" string and no "text".
func isPassageRow(line []byte) bool {
	var j jsonlDoc
	if !decodeJSONLFast(line, &j) && json.Unmarshal(line, &j) != nil {
		return false
	}
	return j.passageRow()
}

// indexCompat is what --compat and --chunk make of an index run (see compatSettings).
type indexCompat struct {
	options  []memory.Option // store options: no chunking
	verbatim bool            // passage rows stored as searchr1.CorpusDocument
	// analyzer is the analyzer a new collection named by --collection gets ("": the
	// store's); check warns when the collection's is not en_lucene.
	analyzer string
	check    bool
}

// compatSettings resolves --compat and --chunk for an index run: with --compat search-r1,
// passage rows are stored verbatim, nothing is chunked (unless --chunk), a new store gets
// the en_lucene analyzer and, with --embedder, passages are embedded up to 256 tokens
// (unless --analyzer, --passage-max-tokens say otherwise); without it, a passage corpus
// is not chunked unless --chunk. What it decides is said on stderr.
func compatSettings(compat searchr1.Compat, sf *storeFlags, analyzer, col string, chunkSet, chunk, code bool, scan fileScan, stderr io.Writer) indexCompat {
	var ic indexCompat
	search := compat == searchr1.CompatSearchR1
	noChunk := !chunk
	if !chunkSet {
		noChunk = search || scan.passages
	}
	if noChunk && !code {
		ic.options = append(ic.options, memory.WithChunking(memory.ChunkOptions{Disabled: true}))
		if !chunkSet && !search {
			fmt.Fprintln(stderr, `index: a passage corpus ({"id", "contents"} rows): each row is stored whole, not chunked (--chunk to chunk long ones)`)
		}
	}
	if !search {
		return ic
	}
	ic.verbatim = true
	var did []string
	if analyzer == "" && !isClusterStore(sf.dir) { // a cluster's BM25 is Weaviate's (serve --compat says so)
		ic.check = true
		if col != "" {
			ic.analyzer = searchr1.CompatAnalyzer
		} else if storeIsNew(sf.dir) {
			ic.options = append(ic.options, memory.WithAnalyzer(searchr1.CompatAnalyzer))
			did = append(did, "analyzer "+searchr1.CompatAnalyzer)
		}
	}
	if sf.embedder != "" && sf.modelFlags.passageMaxTokens == 0 && isONNXModel(sf.embedder) {
		sf.modelFlags.passageMaxTokens = searchr1.CompatPassageMaxTokens
		did = append(did, fmt.Sprintf("passages embedded up to %d tokens", searchr1.CompatPassageMaxTokens))
	}
	chunking := "no chunking"
	if !noChunk {
		chunking = "chunking (--chunk)"
	}
	fmt.Fprintf(stderr, "index: --compat search-r1: contents stored byte for byte, %s%s\n", chunking, strings.Join(append([]string{""}, did...), ", "))
	return ic
}

// collection returns the collection to index into: with --compat search-r1 and
// --collection, a new collection is created with the en_lucene analyzer; a collection
// whose analyzer is another gets the warning serve --compat gives.
func (ic indexCompat) collection(m *memory.Memory, c *memory.Collection, col string, stderr io.Writer) (*memory.Collection, error) {
	if ic.analyzer != "" {
		if _, err := m.GetCollection(col); errors.Is(err, memory.ErrCollectionNotFound) {
			var cerr error
			if c, cerr = m.CreateCollection(col, memory.WithCollectionAnalyzer(ic.analyzer)); cerr != nil {
				return nil, cerr
			}
		} else if err != nil {
			return nil, err
		}
	}
	if ic.check {
		if w := searchr1.AnalyzerWarning(searchr1.CompatSearchR1, c.Analyzer(), c.Name()); w != "" {
			fmt.Fprintln(stderr, "index: warning: "+w)
		}
	}
	return c, nil
}

// isONNXModel reports whether the embedder name is a model folder loaded as an ONNX
// bi-encoder (not a hashing, remote or Model2Vec embedder), whose token caps can be set.
func isONNXModel(name string) bool {
	dir, err := modelDir(name)
	return err == nil && !vectorstore.IsModel2Vec(dir)
}

// storeIsNew reports whether dir holds no store yet (missing or empty), so that index
// creates one.
func storeIsNew(dir string) bool {
	entries, err := os.ReadDir(dir)
	return errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0)
}

// lineSource is the source a JSONL line names ("source", or metadata "source"); "" when
// none (only a line that holds the word is parsed).
func lineSource(line []byte) string {
	if !bytes.Contains(line, []byte(`"source"`)) {
		return ""
	}
	var j struct {
		Source   string         `json:"source"`
		Metadata map[string]any `json:"metadata"`
	}
	if json.Unmarshal(line, &j) != nil {
		return ""
	}
	if j.Source != "" {
		return j.Source
	}
	s, _ := j.Metadata["source"].(string)
	return s
}

// readLines calls fn with each line of r (without its line ending) and its 1-based number.
// A line over maxLineBytes is passed as nil with tooLong set, after being read past.
func readLines(r io.Reader, fn func(n int, line []byte, tooLong bool) error) error {
	br := bufio.NewReaderSize(r, readBufferSize(r))
	var buf []byte
	for n := 1; ; n++ {
		buf = buf[:0]
		tooLong := false
		for {
			chunk, err := br.ReadSlice('\n')
			if !tooLong {
				if len(buf)+len(chunk) > maxLineBytes+1 {
					tooLong, buf = true, buf[:0]
				} else {
					buf = append(buf, chunk...)
				}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				if len(buf) == 0 && !tooLong {
					return nil
				}
				break
			}
			if err != nil {
				return err
			}
			break
		}
		line := bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))
		if tooLong {
			line = nil
		}
		if err := fn(n, line, tooLong); err != nil {
			return err
		}
	}
}

// readBufferSize is the buffer readLines reads r through: 1 MiB, or less for a smaller
// file (a run over thousands of small files allocated 1 MiB twice for each).
func readBufferSize(r io.Reader) int {
	const most, least = 1 << 20, 4 << 10
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return int(min(max(st.Size()+1, least), most))
		}
	}
	return most
}

// decodedLine is a line of a .jsonl file, decoded.
type decodedLine struct {
	n       int // its number, from 1
	tooLong bool
	empty   bool  // blank
	err     error // not valid JSON
	badUTF8 bool  // it held invalid UTF-8 (or an unpaired surrogate escape): the doc has U+FFFD in its place
	doc     jsonlDoc
}

// decodeChunk is how many lines decodeLines hands over at a time; decodeAhead chunks at
// most wait to be taken (a few MB).
const (
	decodeChunk = 512
	decodeAhead = 4
)

// decodeLines reads the lines of r (readLines) and decodes them as JSON on a goroutine of
// its own, a few chunks ahead of fn, which gets them in order: decoding overlaps the
// writes, which a large file would otherwise wait on line by line. An error of fn stops
// the reading and is returned; otherwise the reading's error is.
func decodeLines(r io.Reader, fn func(*decodedLine) error) error {
	return parallel.Ahead(decodeChunk, decodeAhead, func(emit func(decodedLine) bool) error {
		return readLines(r, func(n int, line []byte, tooLong bool) error {
			d := decodedLine{n: n, tooLong: tooLong}
			if !tooLong {
				if len(bytes.TrimSpace(line)) == 0 {
					d.empty = true
				} else if !decodeJSONLFast(line, &d.doc) { // it declines invalid UTF-8
					d.doc = jsonlDoc{}
					d.err = json.Unmarshal(line, &d.doc)
					d.badUTF8 = d.err == nil && replacedUTF8(line, &d.doc)
				}
			}
			if !emit(d) {
				return errStopped
			}
			return nil
		})
	}, fn)
}

// replacedUTF8 reports whether encoding/json, decoding line into d, replaced something by
// U+FFFD: invalid UTF-8 bytes, or an escaped surrogate that is not half of a pair (\ud800).
func replacedUTF8(line []byte, d *jsonlDoc) bool {
	if !utf8.Valid(line) {
		return true
	}
	if !bytes.Contains(line, []byte(`\ud`)) && !bytes.Contains(line, []byte(`\uD`)) {
		return false
	}
	// A surrogate escape: valid pairs decode to one character, lone ones to U+FFFD. One
	// in the document that the line does not spell (as itself or \ufffd) was replaced.
	has := func(s string) bool { return strings.ContainsRune(s, utf8.RuneError) }
	if !has(string(d.ID)) && !has(string(d.BeirID)) && !has(d.Title) && !has(d.Text) && !has(d.Contents) && !has(d.Source) {
		return false
	}
	lower := bytes.ToLower(line)
	return !bytes.ContainsRune(line, utf8.RuneError) && !bytes.Contains(lower, []byte(`\ufffd`))
}

// errStopped ends the reading of decodeLines when its caller has stopped.
var errStopped = errors.New("stopped")

// jsonlDoc accepts BEIR ({"_id","title","text"}), Search-R1 ({"id","contents"}) and our own
// ({"id","title","text","metadata","source"}) lines.
type jsonlDoc struct {
	ID       beir.FlexID    `json:"id"`
	BeirID   beir.FlexID    `json:"_id"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	Contents string         `json:"contents"`
	Metadata map[string]any `json:"metadata"`
	Source   string         `json:"source"`
	// Embedding is the document's precomputed vector.
	Embedding []float32 `json:"embedding"`
	// ExportHeader and ExportEnd are the header and end lines of a memory export (skipped).
	ExportHeader json.RawMessage `json:"memory_export"`
	ExportEnd    json.RawMessage `json:"memory_export_end"`
}

// passageRow reports whether the line is a Search-R1 / pyserini passage ({"id",
// "contents"}, no "text"): document() splits its contents into title and text.
func (j jsonlDoc) passageRow() bool { return j.Text == "" && j.Contents != "" }

func (j jsonlDoc) document() memory.Document {
	d := memory.Document{ID: string(j.ID), Title: j.Title, Text: j.Text, Metadata: j.Metadata, Source: j.Source, Embedding: j.Embedding}
	if d.ID == "" {
		d.ID = string(j.BeirID)
	}
	if d.Text == "" && j.Contents != "" {
		d.Title, d.Text = beir.SplitContents(j.Contents)
	}
	return d
}

// indexFile reads one file: a .txt/.md file is one document (first line = title, id = the
// path, source = its absolute path), a .jsonl file one document per line (source = the
// line's own, else the file's absolute path); a code file a document per chunk
// (indexCodeFile), an HTML or PDF file its extracted text (indexExtracted).
func (ix *indexer) indexFile(i int) error {
	ix.file = i
	path := ix.files[i]
	src := sourceOf(path)
	whole := docLoc{file: i}
	switch kindOf(path) {
	case kindCode:
		return ix.indexCodeFile(i)
	case kindHTML, kindPDF:
		return ix.indexExtracted(i)
	}
	if strings.ToLower(filepath.Ext(path)) != ".jsonl" {
		b, err := os.ReadFile(path)
		if err != nil {
			ix.skipFile(i, skipUnreadable, err.Error())
			return nil
		}
		if !utf8.Valid(b) {
			ix.skipFile(i, skipNotUTF8, "")
			return nil
		}
		title, text, _ := strings.Cut(string(b), "\n")
		title = strings.TrimSpace(strings.TrimLeft(title, "# "))
		if strings.TrimSpace(text) == "" && title == "" {
			ix.skipFile(i, skipEmpty, "")
			return nil
		}
		ix.claim([]string{src})
		return ix.add(memory.Document{ID: filepath.ToSlash(path), Title: title, Text: strings.TrimSpace(text),
			Metadata: map[string]any{"path": filepath.ToSlash(path)}, Source: src}, whole)
	}
	f, err := os.Open(path)
	if err != nil {
		ix.skipFile(i, skipUnreadable, err.Error())
		return nil
	}
	defer f.Close()
	ix.claim(ix.scan.srcs[i])
	err = decodeLines(f, func(dl *decodedLine) error {
		l := docLoc{file: ix.file, line: dl.n}
		// The vector of this line is read whatever becomes of the line, to stay in step.
		var vec []float32
		var vecErr error
		if ix.vecs != nil {
			if vec, vecErr = ix.vecs.Next(nil); vecErr != nil && !errors.Is(vecErr, vecfile.ErrValue) {
				if vecErr == io.EOF { // a stream of unknown length ended first
					return fmt.Errorf("%w: %s ended after %d rows, before line %d of %s (row i is the vector of line i+1)",
						vecfile.ErrRowCount, ix.vecs.Path(), ix.vecs.Row(), dl.n, ix.files[ix.file])
				}
				return vecErr
			}
		}
		switch {
		case dl.tooLong:
			ix.skip(l, "line longer than %d bytes", maxLineBytes)
			return nil
		case dl.empty:
			ix.skip(l, "empty line")
			return nil
		case dl.err != nil:
			ix.skip(l, "invalid JSON: %v", dl.err)
			return nil
		case dl.doc.ExportHeader != nil || dl.doc.ExportEnd != nil: // not a document
			ix.prog.add(1)
			return nil
		}
		d := dl.doc.document()
		if ix.verbatim && dl.doc.passageRow() {
			d.Title, d.Text = "", dl.doc.Contents // searchr1.CorpusDocument
		}
		if _, has := d.Metadata["source"]; d.Source == "" && !has {
			d.Source = src
		}
		switch {
		case vecErr != nil:
			ix.skip(l, "%v", vecErr)
			return nil
		case vec != nil && d.Embedding != nil:
			ix.skip(l, "document %q has an \"embedding\" field and a row of --vectors: give one", capEcho(d.ID))
			return nil
		case vec != nil:
			d.Embedding = vec
		case d.Embedding == nil && ix.vectorsOnly != nil:
			ix.skip(l, "document %q has no embedding, and the store's vectors come from %q, which is not loaded to embed it", capEcho(d.ID), ix.vectorsOnly.ID())
			return nil
		}
		if dl.badUTF8 {
			if ix.badUTF8 == 0 {
				ix.badUTF8Line = dl.n
			}
			ix.badUTF8++
		}
		return ix.add(d, l)
	})
	ix.warnUTF8(i)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// warnUTF8 warns, once for file i, of its lines that held invalid UTF-8: they are stored
// with U+FFFD in place of each invalid byte (as most corpus readers decode), so a stray
// byte does not cost a passage, and the warning names the file, the first such line and
// how many there are, for the source to be fixed.
func (ix *indexer) warnUTF8(i int) {
	if ix.badUTF8 == 0 {
		return
	}
	fmt.Fprintf(ix.stderr, "warning: %s:%d: invalid UTF-8 in %d lines of this file (the first here), stored with U+FFFD (\uFFFD) in place of each invalid byte\n",
		ix.files[i], ix.badUTF8Line, ix.badUTF8)
	ix.badUTF8, ix.badUTF8Line = 0, 0
}

// progressEvery is how often the plain progress lines come (tests set 0: one per write).
var progressEvery = 2 * time.Second

// progress shows a bar with rate and ETA on a terminal, plain lines otherwise.
type progress struct {
	bar    *progressbar.ProgressBar
	w      io.Writer
	total  int
	done   int
	last   time.Time
	start  time.Time
	label  string
	stored func() int // documents stored (acknowledged) so far; nil: not shown
}

func newProgress(w io.Writer, total int, label string) *progress {
	p := &progress{w: w, total: total, start: time.Now(), last: time.Now(), label: label}
	if isTerminal(w) {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(label),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("docs"),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond))
	}
	return p
}

func (p *progress) add(n int) {
	p.done += n
	if p.bar != nil {
		p.bar.Add(n)
		return
	}
	if time.Since(p.last) >= progressEvery || p.done == p.total {
		p.last = time.Now()
		rate := float64(p.done) / time.Since(p.start).Seconds()
		eta := time.Duration(float64(p.total-p.done)/rate) * time.Second
		stored := ""
		if p.stored != nil {
			stored = fmt.Sprintf(", %d stored", p.stored())
		}
		fmt.Fprintf(p.w, "%s: %d/%d docs%s (%.0f docs/s, eta %s)\n", p.label, p.done, p.total, stored, rate, eta.Round(time.Second))
	}
}

// staleRemoved reports the stale documents removed so far (after each removal: plain
// lines only, at most one every progressEvery).
func (p *progress) staleRemoved(n int) {
	if p.bar == nil && time.Since(p.last) >= progressEvery {
		p.last = time.Now()
		fmt.Fprintf(p.w, "%s: stale documents: %d removed\n", p.label, n)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}

// indexCode chunks and indexes a source tree, then prints a summary.
func indexCode(ctx context.Context, c *memory.Collection, root string, batch int, stdout, stderr io.Writer) error {
	start := time.Now()
	var bar *progressbar.ProgressBar
	if isTerminal(stderr) {
		bar = progressbar.NewOptions(-1, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("chunking"),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("chunks"),
			progressbar.OptionThrottle(100*time.Millisecond))
	}
	last := time.Now()
	var done memory.CodeProgress // what is stored
	sum, err := c.AddCode(ctx, root, memory.CodeOptions{BatchSize: batch, Progress: func(p memory.CodeProgress) {
		done = p
		switch {
		case bar != nil:
			bar.Set(p.Chunks)
		case time.Since(last) >= 2*time.Second:
			last = time.Now()
			fmt.Fprintf(stderr, "indexing code: %d files, %d chunks (%.0f chunks/s), at %s\n",
				p.Files, p.Chunks, float64(p.Chunks)/time.Since(start).Seconds(), p.Path)
		}
	}})
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "index failed: %d chunks were stored (durably) before the error; every file not yet replaced keeps its earlier chunks (a file replaced in several batches also holds the batches stored); run index again to finish.\n",
			done.Chunks)
		return err
	}
	fmt.Fprintf(stdout, "indexed %d files (%d bytes) as %d chunks into %q in %s\n",
		sum.Files, sum.Bytes, sum.Chunks, c.Name(), time.Since(start).Round(time.Millisecond))
	for _, kv := range sortedCounts(sum.ChunksByLanguage) {
		fmt.Fprintf(stdout, "  %-12s %6d chunks in %d files\n", kv.k, kv.n, sum.FilesByLanguage[kv.k])
	}
	for _, kv := range sortedCounts(sum.Skipped) {
		fmt.Fprintf(stdout, "  skipped %-20s %d\n", kv.k+":", kv.n)
	}
	return nil
}

type count struct {
	k string
	n int
}

func sortedCounts(m map[string]int) []count {
	out := make([]count, 0, len(m))
	for k, n := range m {
		out = append(out, count{k, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n > out[j].n || (out[i].n == out[j].n && out[i].k < out[j].k) })
	return out
}
