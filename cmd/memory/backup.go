package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/vectorstore"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() {
	commandHelp["backup"] = helpText{
		usage: `memory backup --store DIR OUT`,
		help: `Writes a backup of the store to OUT (a file; "-" for standard output): a tar archive of
the store of record (store.db, copied in one read transaction, so a consistent copy as of
the moment the backup starts, while other readers go on) and the manifest, each with its
size and SHA-256. The derived indexes (bm25/, vectors/) are not copied: the restored store
rebuilds them from store.db when it is first opened (memory restore --check does it at once).

OUT is written to a temporary file beside it, fsynced, and renamed into place only when the
backup is whole: a failed or killed backup leaves no OUT (and any earlier OUT as it was).

While another process has the store open writable (memory serve, an application), the
backup is taken by that process, beside its searches and writes, and streamed to this one
over its socket; if it exits during the backup, the backup fails and leaves no OUT.`,
		example: `  memory backup --store ./s s.tar
  memory backup --store ./s - | gzip > s.tar.gz`,
	}
	commandHelp["restore"] = helpText{
		usage: `memory restore ARCHIVE --store NEWDIR [--check]`,
		help: `Restores the backup ARCHIVE ("-": standard input) into NEWDIR, which must not exist or be
empty. The archive is extracted into a temporary directory beside NEWDIR; every entry is
checked against the size and SHA-256 the archive records, and store.db against bbolt's own
checks; only then is it renamed to NEWDIR. A damaged, truncated or foreign archive fails
(exit status 1, "not a valid backup archive") and leaves nothing at NEWDIR.

With --check the restored store is opened, its derived indexes built from store.db, and
checked as memory check does.`,
		example: `  memory restore s.tar --store ./s2 --check
  gunzip -c s.tar.gz | memory restore - --store ./s2`,
	}
	commandHelp["export"] = helpText{
		usage: `memory export --store DIR [--collection C] OUT.jsonl`,
		help: `Writes the documents of every collection (or of C) to OUT.jsonl ("-": standard output), one
JSON object per line, collection by collection, streaming: a header line naming the
collection and the embedder of its vectors, one line per document, an end line counting them:

  {"memory_export":{"format":1,"collection":"default","embedder":{"id":"...","dim":384},...}}
  {"id":"1","title":"...","text":"...","metadata":{...},"embedding":[0.12,...]}
  {"memory_export_end":{"collection":"default","documents":1}}

A document line is the shape memory index reads (which skips the header and end lines), so
an export can also be indexed: memory index --embedder-id ID OUT.jsonl. "embedding" is the
stored vector of a document stored whole; chunked documents are exported without theirs
(one per chunk): an import embeds them again with the store's embedder. Each collection is
read in one read transaction (a consistent snapshot of it). OUT.jsonl is written to a
temporary file and renamed into place when whole. Beside a process that has the store open
writable, the export is taken by that process and streamed to this one.`,
		example: `  memory export --store ./s out.jsonl
  memory export --store ./s --collection kb - | gzip > kb.jsonl.gz`,
	}
	commandHelp["import"] = helpText{
		usage: `memory import --store DIR [--collection C] [--batch N] IN.jsonl`,
		help: `Stores the documents of a memory export (see memory export) in the collections it names
(or only C), creating the store when DIR does not exist. A new store gets the embedder the
export's header names (loaded by name when the CLI can, else its vectors are recorded under
that name, as index --embedder-id does); a store whose embedder is another one is refused
("embedder does not match the store"), writing nothing.

Resumable: documents are written in batches (one transaction each), and a document already
stored identically (same title, text, metadata and vector) is not written again, so running
the same import again after a kill or an error stores the rest. An export cut short (a
collection without its end line, or a last line cut in the middle) or with a damaged line
stores every whole document line before the cut or the damage, then fails (exit status 1)
naming the line and the byte where it is cut and what was stored: that file holds no more,
and importing a whole export stores the rest.`,
		example: `  memory import --store ./s2 out.jsonl
  memory import --store ./s2 --collection kb --batch 1000 out.jsonl`,
	}
}

func newBackupCmd() *cobra.Command {
	var dir string
	c := newCommand("backup", "write a consistent backup of a store (while it serves and takes writes) to a file",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runBackup(ctx, dir, args, stdout, stderr)
		})
	addStoreDir(c.Flags(), &dir)
	return c
}

// addStoreDir adds --store DIR alone, for the commands that copy a store out (backup,
// export): they open it without an embedder or an index.
func addStoreDir(fs *pflag.FlagSet, dir *string) {
	fs.StringVarP(dir, "store", "s", "", "the store directory `DIR` (required; export also reads a store on a Weaviate cluster, weaviate://...)")
	completeDirs(fs, "store")
}

func runBackup(ctx context.Context, dir string, args []string, stdout, stderr io.Writer) error {
	m, out, err := openCopySource(dir, args, "OUT", stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	start := time.Now()
	var info memory.BackupInfo
	err = writeOutput(out, stdout, func(w io.Writer) error {
		var err error
		info, err = m.Backup(ctx, w)
		return err
	})
	if err != nil {
		return err
	}
	docs := fmt.Sprintf("%d documents", info.Documents)
	if info.Documents < 0 {
		docs = "documents not counted (a collection's counters need a recount: memory check --repair)"
	}
	fmt.Fprintf(stderr, "backup of %s: %s, store.db %d bytes, archive %d bytes, in %s\n",
		dir, docs, info.StoreBytes, info.Bytes, time.Since(start).Round(time.Millisecond))
	return nil
}

func newRestoreCmd() *cobra.Command {
	var sf storeFlags
	var check bool
	c := newCommand("restore", "restore a backup written by memory backup into a new store directory",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runRestore(ctx, &sf, check, args, stdout, stderr)
		})
	fs := c.Flags()
	sf.addStore(fs)
	fs.Lookup("store").Usage = "the new store directory `NEWDIR` (required; it must not exist, or be empty)"
	fs.BoolVar(&check, "check", false, "open the restored store, build its derived indexes and check them (as memory check)")
	return c
}

func runRestore(ctx context.Context, sf *storeFlags, check bool, args []string, stdout, stderr io.Writer) error {
	path, err := storePath(sf.dir, args, "ARCHIVE")
	if err != nil {
		return err
	}
	if isClusterStore(sf.dir) {
		return fmt.Errorf("%w: restore into a store on a Weaviate cluster (an archive is a directory store's files: restore it into a directory, then `memory export` it and `memory import` the export into the cluster)", memory.ErrNotSupported)
	}
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	start := time.Now()
	if err := memory.Restore(ctx, r, sf.dir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %s into %s in %s\n", path, sf.dir, time.Since(start).Round(time.Millisecond))
	if !check {
		fmt.Fprintln(stdout, "its derived indexes (BM25, vectors) are built from store.db when it is first opened")
		return nil
	}
	// A first open builds the derived indexes on disk (the check reports each as rebuilt,
	// being missing); the check that is printed is of the store as it is then.
	m, err := sf.open(sf.dir, stderr)
	if err != nil {
		return err
	}
	if _, err := m.Check(ctx, false); err != nil {
		m.Close()
		return err
	}
	if err := m.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "built its derived indexes in %s\n", time.Since(start).Round(time.Millisecond))
	if m, err = sf.open(sf.dir, stderr, memory.ReadOnly()); err != nil {
		return err
	}
	defer m.Close()
	rep, err := m.Check(ctx, false)
	if err != nil {
		return err
	}
	for _, ix := range rep.Indexes {
		fmt.Fprintln(stdout, ix)
	}
	if !rep.OK() {
		return checkError(rep, false)
	}
	return nil
}

func newExportCmd() *cobra.Command {
	var dir, col string
	c := newCommand("export", "write a store's documents, metadata and vectors as JSON Lines, collection by collection",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runExport(ctx, dir, col, args, stdout, stderr)
		})
	fs := c.Flags()
	addStoreDir(fs, &dir)
	addCollection(fs, &col, "export only the collection `C` (default: every collection)")
	return c
}

func runExport(ctx context.Context, dir, col string, args []string, stdout, stderr io.Writer) error {
	m, out, err := openCopySource(dir, args, "OUT.jsonl", stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	var cols []string
	if col != "" {
		if _, err := openCollection(m, col); err != nil {
			return err
		}
		cols = []string{col}
	}
	start := time.Now()
	var st memory.ExportStats
	if err := writeOutput(out, stdout, func(w io.Writer) error {
		var err error
		st, err = m.Export(ctx, w, cols...)
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "exported %d documents (%d with their vector) of %d collections in %s\n",
		st.Documents, st.Vectors, st.Collections, time.Since(start).Round(time.Millisecond))
	return nil
}

func newImportCmd() *cobra.Command {
	var sf storeFlags
	var col string
	var batch int
	c := newCommand("import", "store the documents of a memory export (resumable: a re-run skips what is stored)",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runImport(ctx, &sf, col, batch, args, stdout, stderr)
		})
	fs := c.Flags()
	sf.addStore(fs)
	sf.addEmbedder(fs, true)
	sf.addIndex(fs)
	addCollection(fs, &col, "import only the collection `C` of the export (default: every one)")
	fs.IntVar(&batch, "batch", defaultIndexBatch, "documents per write (one transaction)")
	return c
}

func runImport(ctx context.Context, sf *storeFlags, col string, batch int, args []string, stdout, stderr io.Writer) error {
	path, err := storePath(sf.dir, args, "IN.jsonl")
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	hdr, err := peekExportHeader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	var extra []memory.Option
	if e := hdr.Embedder; e != nil && sf.embedder == "" {
		emb, err := resolveEmbedder(ctx, e.ID, e.Dim, sf.spec())
		if err != nil {
			fmt.Fprintf(stderr, "memory: model %q is not loaded (%v): its %d-dimensional vectors are recorded under that name; searches use BM25 until it can be loaded\n", e.ID, err, e.Dim)
			emb = vectorstore.NewVectorsOnly(e.ID, e.Dim)
		}
		extra = append(extra, memory.WithEmbedder(emb))
	}
	m, err := sf.create(sf.dir, stderr, extra...)
	if err != nil {
		return err
	}
	defer m.Close()
	opts := memory.ImportOptions{BatchSize: batch}
	if col != "" {
		opts.Collections = []string{col}
	}
	start, last := time.Now(), time.Now()
	opts.Progress = func(st memory.ImportStats) {
		if time.Since(last) >= progressEvery {
			last = time.Now()
			fmt.Fprintf(stderr, "importing: %d documents read, %d stored, %d already stored (%.0f docs/s)\n",
				st.Read, st.Stored, st.Unchanged, float64(st.Read)/time.Since(start).Seconds())
		}
	}
	st, err := m.Import(ctx, bufio.NewReaderSize(f, 1<<20), opts)
	if errors.Is(err, memory.ErrBadExport) {
		fmt.Fprintf(stderr, "import failed: %s is not a whole export (see the error below): %d documents read, %d stored, %d were already stored; every whole document line before the damage or the cut is stored.\n"+
			"  running the same import again on this file stores nothing more: import a whole export to store the rest (documents already stored identically are skipped)\n",
			path, st.Read, st.Stored, st.Unchanged)
		return err
	}
	if err != nil {
		fmt.Fprintf(stderr, "import failed: %d documents read, %d stored before the error, %d were already stored; run the same import again to finish (documents already stored identically are skipped)\n",
			st.Read, st.Stored, st.Unchanged)
		return err
	}
	fmt.Fprintf(stdout, "imported %d collections from %s into %s in %s: %d documents read, %d stored, %d already stored identically",
		st.Collections, path, sf.dir, time.Since(start).Round(time.Millisecond), st.Read, st.Stored, st.Unchanged)
	if st.Ignored > 0 {
		fmt.Fprintf(stdout, ", %d of other collections ignored", st.Ignored)
	}
	fmt.Fprintln(stdout)
	return nil
}

// peekExportHeader reads the header of the first collection of an export.
func peekExportHeader(r io.Reader) (*memory.ExportHeader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var el struct {
				H *memory.ExportHeader `json:"memory_export"`
			}
			if json.Unmarshal(line, &el) != nil || el.H == nil {
				return nil, fmt.Errorf("%w: its first line is not a header (%q)", memory.ErrBadExport, `{"memory_export":{...}}`)
			}
			return el.H, nil
		}
		if err == io.EOF {
			return nil, fmt.Errorf("%w: empty", memory.ErrBadExport)
		}
		if err != nil {
			return nil, err
		}
	}
}

// openCopySource checks the arguments of a command that copies a store out (backup,
// export): --store DIR, required, and one output path (named name in messages), which it
// returns with the store opened by openForCopy.
func openCopySource(dir string, args []string, name string, stderr io.Writer) (*memory.Memory, string, error) {
	path, err := storePath(dir, args, name)
	if err != nil {
		return nil, "", err
	}
	m, err := openForCopy(dir, stderr)
	if err != nil {
		return nil, "", err
	}
	return m, path, nil
}

// storePath checks the arguments of a command that takes --store (dir, required) and
// exactly one path argument (named name in messages), which it returns; anything else is
// a usage error.
func storePath(dir string, args []string, name string) (string, error) {
	switch {
	case dir == "":
		return "", usagef("--store DIR is required")
	case len(args) == 0:
		return "", usagef("no %s given (\"-\" for the standard stream)", name)
	case len(args) > 1:
		return "", usagef("one %s, not %d: %s", name, len(args), strings.Join(quoteAll(args), " "))
	}
	return args[0], nil
}

// openForCopy opens an existing store read-only for backup and export: they read the store
// of record only, so no embedder is loaded and no index opened.
func openForCopy(dir string, stderr io.Writer) (*memory.Memory, error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := openExisting(dir, memory.ReadOnly(), memory.WithLogger(log))
	if err != nil && !isClusterStore(dir) && (errors.Is(err, memory.ErrStoreNotFound) || errors.Is(err, memory.ErrNotAStore)) {
		return nil, storeHint(err, dir)
	}
	return m, err
}

// writeOutput runs write on path ("-": stdout) atomically: into a temporary file beside
// it, fsynced, renamed to path only when write succeeded, and the folder fsynced.
func writeOutput(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		bw := bufio.NewWriterSize(stdout, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	return atomicfile.Write(path, atomicfile.Options{}, write)
}
