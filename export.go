package memory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/agentmem/memory/internal/parallel"
	"github.com/agentmem/memory/internal/store"
)

// Export and import: a store's documents, with their metadata and vectors, as JSON Lines,
// collection by collection. Each collection is a header line, one line per document, and
// an end line:
//
//	{"memory_export":{"format":1,"collection":"default","embedder":{"id":"...","dim":384},"created":"..."}}
//	{"id":"1","title":"...","text":"...","metadata":{"source":"..."},"embedding":[0.1,...]}
//	...
//	{"memory_export_end":{"collection":"default","documents":2}}
//
// A document line is the JSONL shape `memory index` reads (it skips the header and end
// lines), so an export can be indexed as well as imported. "embedding" is the stored vector
// of a document stored whole; a chunked document has one vector per chunk and is exported
// without them (an import chunks and embeds it again with the store's embedder, the one
// the header names).

// exportFormat is the export format this build writes and reads.
const exportFormat = 1

// ExportHeader is the first line of each collection of an export (under "memory_export").
type ExportHeader struct {
	Format     int    `json:"format"`
	Collection string `json:"collection"`
	// Embedder made the collection's vectors (nil: the store has none).
	Embedder *ExportEmbedder `json:"embedder,omitempty"`
	// Analyzer is the collection's BM25 analyzer ("": English, exports of older builds);
	// an import creates the collection with it (ErrAnalyzerMismatch when it exists with
	// another).
	Analyzer string `json:"analyzer,omitempty"`
	// Metadata is the collection's own metadata (WithCollectionMetadata), given to the
	// collection when an import creates it.
	Metadata map[string]any `json:"metadata,omitempty"`
	Created  time.Time      `json:"created"`
}

// ExportEmbedder names the embedder of an export's vectors, as the store's manifest does.
type ExportEmbedder struct {
	ID  string `json:"id"`
	Dim int    `json:"dim"`
	// Precomputed: the vectors were computed outside the store and recorded under ID.
	Precomputed bool `json:"precomputed,omitempty"`
}

// ExportEnd is the last line of each collection of an export (under "memory_export_end").
type ExportEnd struct {
	Collection string `json:"collection"`
	Documents  int    `json:"documents"`
}

// exportLine is a header or end line.
type exportLine struct {
	Header *ExportHeader `json:"memory_export,omitempty"`
	End    *ExportEnd    `json:"memory_export_end,omitempty"`
}

// exportDoc is a document line (its embedding is appended by hand: faster than
// encoding/json's, and the same shortest float32 text).
type exportDoc struct {
	ID       string         `json:"id"`
	Title    string         `json:"title,omitempty"`
	Text     string         `json:"text"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// ExportStats counts what an export wrote.
type ExportStats struct {
	Collections int
	Documents   int
	Vectors     int // documents exported with their vector
}

// Export writes the documents of the named collections (none: every collection, sorted) to
// w as JSON Lines (see the format above), streaming: each collection is read in one read
// transaction, so it is a consistent snapshot of that collection while writers go on (a
// write that must grow the file's mapping waits for it, as for [Memory.Backup]), and
// memory stays bounded whatever its size. A named collection that does not exist is
// ErrCollectionNotFound. A read-only store that reads through its writer (see [ReadOnly])
// gets the export from the writer, streamed over its socket. A store on a Weaviate cluster
// exports the same lines, collection headers without an analyzer, read in batches (not one
// snapshot; cluster_export.go).
func (m *Memory) Export(ctx context.Context, w io.Writer, collections ...string) (ExportStats, error) {
	var st ExportStats
	if m.closed.Load() {
		return st, ErrClosed
	}
	if m.cluster != nil {
		return m.cluster.export(ctx, m, w, collections)
	}
	if m.remote != nil { // a read-only store beside a writer: the writer exports
		return m.rs.remoteExport(ctx, w, collections)
	}
	names := slices.Clone(collections)
	if len(names) == 0 {
		var err error
		if names, err = m.reg.collectionNames(); err != nil {
			return st, err
		}
	} else {
		for i, n := range names {
			if n == "" {
				names[i] = DefaultCollection
			}
			ok, err := m.reg.collectionExists(names[i])
			if err != nil {
				return st, err
			}
			if !ok && names[i] != DefaultCollection {
				return st, fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(names[i]))
			}
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var emb *ExportEmbedder
	if e := m.man.Embedder; e != nil {
		emb = &ExportEmbedder{ID: e.ID, Dim: e.Dim, Precomputed: e.Precomputed}
	}
	now := time.Now().UTC()
	for _, name := range names {
		if err := m.exportCollection(ctx, bw, name, emb, now, &st); err != nil {
			return st, err
		}
	}
	return st, bw.Flush()
}

// exportCollection writes one collection: header, documents, end line.
func (m *Memory) exportCollection(ctx context.Context, bw *bufio.Writer, name string, emb *ExportEmbedder, now time.Time, st *ExportStats) error {
	hdr := &ExportHeader{Format: exportFormat, Collection: name, Embedder: emb, Analyzer: m.collectionAnalyzer(name), Created: now}
	if js, err := m.db.CollectionMeta(name); err == nil && len(js) > 0 {
		if err := json.Unmarshal(js, &hdr.Metadata); err != nil {
			return fmt.Errorf("memory: export: collection %s metadata: %w", store.ShowKey(name), err)
		}
		if len(hdr.Metadata) == 0 {
			hdr.Metadata = nil
		}
	} else if err != nil && !errors.Is(err, ErrCollectionNotFound) {
		return err
	}
	if err := writeJSONLine(bw, exportLine{Header: hdr}); err != nil {
		return err
	}
	dw := newExportDocWriter()
	n := 0
	err := m.db.View(func(tx *store.Tx) error {
		return tx.EachRecord(name, false, func(id string, r *store.Record) error {
			if n%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			var vec []float32
			if len(r.Chunks) == 0 && emb != nil {
				var err error
				if vec, err = tx.Vector(name, id); err != nil {
					return err
				}
			}
			n++
			return dw.write(bw, name, id, r, vec, st)
		})
	})
	if err != nil {
		return err
	}
	st.Collections++
	st.Documents += n
	return writeJSONLine(bw, exportLine{End: &ExportEnd{Collection: name, Documents: n}})
}

// exportDocWriter writes document lines, reusing its buffer.
type exportDocWriter struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func newExportDocWriter() *exportDocWriter {
	dw := &exportDocWriter{}
	dw.enc = json.NewEncoder(&dw.buf)
	dw.enc.SetEscapeHTML(false)
	return dw
}

// write writes the line of document id (record r, vector vec: nil for none) of collection
// col, counting a vector in st.
func (dw *exportDocWriter) write(bw *bufio.Writer, col, id string, r *store.Record, vec []float32, st *ExportStats) error {
	dw.buf.Reset()
	if err := dw.enc.Encode(exportDoc{ID: id, Title: r.Title, Text: r.Text, Metadata: r.Metadata}); err != nil {
		return fmt.Errorf("memory: export %s of collection %s: %w", store.ShowKey(id), store.ShowKey(col), err)
	}
	line := bytes.TrimSuffix(dw.buf.Bytes(), []byte("\n"))
	if vec != nil {
		line = appendEmbedding(line[:len(line)-1], vec)
		st.Vectors++
	}
	if _, err := bw.Write(line); err != nil {
		return err
	}
	return bw.WriteByte('\n')
}

// appendEmbedding appends `,"embedding":[...]}` to a JSON object without its closing brace.
func appendEmbedding(b []byte, vec []float32) []byte {
	b = append(b, `,"embedding":[`...)
	for i, f := range vec {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
	}
	return append(b, "]}"...)
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ImportOptions configure [Memory.Import].
type ImportOptions struct {
	// Collections, when set, imports only these collections of the export.
	Collections []string
	// BatchSize is how many documents one write (one transaction) holds (0: 1,000).
	BatchSize int
	// Progress, when set, is called after each batch with the counts so far.
	Progress func(ImportStats)
}

// ImportStats counts what an import did.
type ImportStats struct {
	Collections int // collections read (their header seen)
	Read        int // documents read
	Stored      int // documents written (new, or different from the stored one)
	Unchanged   int // documents already stored identically (not written again)
	Ignored     int // documents of collections not asked for
}

// maxExportLine caps one line of an export (a document is at most Options.MaxDocumentBytes,
// 16 MiB by default, its vector a few KB).
const maxExportLine = 64 << 20

// Import reads an export (see [Memory.Export]) from r and stores its documents, with their
// metadata and vectors, in the collections it names (creating them), in batches of
// ImportOptions.BatchSize, each one transaction.
//
// It is resumable: a document already stored identically (same title, text and metadata,
// and the same vector when the export has one) is not written again, so running the same
// import again after a kill or an error skips what was stored and writes the rest.
//
// Before the documents of a collection whose header names an embedder, the store's
// embedder (recorded in its manifest) must be that one: else ErrEmbedderMismatch, and
// nothing of that collection is written. An input without a header line, with an
// unreadable line, or truncated (a collection without its end line, or a last line cut
// short) is ErrBadExport: every whole document line before the bad line or the cut is
// stored first, and the error names the line and its byte offset. Running the same import
// again on that input stores nothing more (what it holds is stored); a whole export
// finishes the job.
//
// A store on a Weaviate cluster imports too (each batch one Upsert, not one transaction);
// a collection whose header names an analyzer other than the default one, or collection
// metadata, is ErrNotSupported naming it, before anything of it is written.
func (m *Memory) Import(ctx context.Context, r io.Reader, opts ImportOptions) (ImportStats, error) {
	var st ImportStats
	if err := m.writable(); err != nil {
		return st, err
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 1000
	}
	want := map[string]bool{}
	for _, c := range opts.Collections {
		if c == "" {
			c = DefaultCollection
		}
		want[c] = true
	}
	im := importer{m: m, ctx: ctx, opts: opts, st: &st}
	// The lines are read and decoded on a goroutine of their own, a few chunks ahead of
	// the writes (decoding a line's vector costs about as much as storing it).
	err := parallel.Ahead(decodeChunk, 4, func(emit func(parsedLine) bool) error {
		decodeExport(r, emit)
		return nil
	}, func(pl *parsedLine) error { return im.handleLine(pl, want) })
	if err != nil {
		return st, err
	}
	if im.col != "" {
		if err := im.flush(); err != nil {
			return st, err
		}
		return st, fmt.Errorf("%w: truncated: collection %s has no end line after %d documents (the input ends at byte %d; they are stored: run the import again on a whole export to finish)",
			ErrBadExport, store.ShowKey(im.col), im.read, im.size)
	}
	if st.Collections == 0 {
		return st, fmt.Errorf("%w: no collection header (%q) in the input", ErrBadExport, `{"memory_export":{...}}`)
	}
	return st, nil
}

// readExportLine reads one line into buf and returns it without its ending, with its
// length in the input (its ending included) and whether it ended (a last line without a
// newline did not); a line over maxExportLine is an error.
func readExportLine(br *bufio.Reader, buf []byte) (line []byte, size int, ended bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxExportLine {
			return nil, len(buf), false, fmt.Errorf("%w: a line longer than %d bytes", ErrBadExport, maxExportLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(buf) > 0 {
			err = nil
		}
		ended = bytes.HasSuffix(buf, []byte("\n"))
		return bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r")), len(buf), ended, err
	}
}

// importer holds the state of one Import.
type importer struct {
	m    *Memory
	ctx  context.Context
	opts ImportOptions
	st   *ImportStats

	col     string // the collection being read ("" before the first header)
	skip    bool   // its documents are not imported (not asked for)
	read    int    // its documents read
	pending []Document
	size    int64 // bytes of the input read (through the last line handled)
}

// handleLine handles one line (handle); when the input is bad there (ErrBadExport), the
// whole document lines read before it are stored first, and the error says so.
func (im *importer) handleLine(pl *parsedLine, want map[string]bool) error {
	err := im.handle(pl, want)
	if err == nil {
		im.size = pl.off + int64(pl.size)
		return nil
	}
	if !errors.Is(err, ErrBadExport) || im.st.Read == 0 {
		return err
	}
	if ferr := im.flush(); ferr != nil {
		return fmt.Errorf("%w; storing the %d documents read before it failed: %w", err, len(im.pending), ferr)
	}
	return fmt.Errorf("%w (every whole document line before it is stored: %d documents stored by this import, %d were already stored)",
		err, im.st.Stored, im.st.Unchanged)
}

// begin starts the collection of header h (line n).
func (im *importer) begin(h *ExportHeader, want map[string]bool, n int) error {
	if im.col != "" {
		return fmt.Errorf("%w: line %d: collection %s begins before the end line of %s", ErrBadExport, n, store.ShowKey(h.Collection), store.ShowKey(im.col))
	}
	if h.Format <= 0 || h.Format > exportFormat {
		return fmt.Errorf("%w: line %d: export format %d (this build reads up to %d)", ErrBadExport, n, h.Format, exportFormat)
	}
	if h.Collection == "" {
		h.Collection = DefaultCollection
	}
	im.col, im.read = h.Collection, 0
	im.st.Collections++
	im.skip = len(want) > 0 && !want[h.Collection]
	if im.skip {
		return nil
	}
	if err := im.m.checkImportEmbedder(h); err != nil {
		return err
	}
	if cs := im.m.cluster; cs != nil {
		if err := cs.checkImportCollection(im.m, h); err != nil {
			return err
		}
		_, err := im.m.CreateCollection(h.Collection)
		return err
	}
	var opts []CollectionOption
	if h.Analyzer != "" {
		opts = append(opts, WithCollectionAnalyzer(h.Analyzer))
	}
	if len(h.Metadata) > 0 {
		opts = append(opts, WithCollectionMetadata(h.Metadata))
	}
	_, err := im.m.CreateCollection(h.Collection, opts...)
	return err
}

// end ends the collection of end line e (line n).
func (im *importer) end(e *ExportEnd, n int) error {
	if im.col == "" || e.Collection != im.col {
		return fmt.Errorf("%w: line %d: the end line of collection %s, while reading %s", ErrBadExport, n, store.ShowKey(e.Collection), store.ShowKey(im.col))
	}
	if err := im.flush(); err != nil {
		return err
	}
	if e.Documents != im.read {
		return fmt.Errorf("%w: collection %s: its end line counts %d documents, %d were read", ErrBadExport, store.ShowKey(im.col), e.Documents, im.read)
	}
	im.col = ""
	return nil
}

// importDoc is a document line.
type importDoc struct {
	ID        string         `json:"id"`
	Title     string         `json:"title"`
	Text      string         `json:"text"`
	Metadata  map[string]any `json:"metadata"`
	Source    string         `json:"source"`
	Embedding []float32      `json:"embedding"`
}

// handle acts on one decoded line.
func (im *importer) handle(pl *parsedLine, want map[string]bool) error {
	switch {
	case pl.err != nil:
		return pl.err
	case pl.header != nil:
		return im.begin(pl.header, want, pl.n)
	case pl.end != nil:
		return im.end(pl.end, pl.n)
	case im.col == "":
		return fmt.Errorf("%w: line %d: a document before any collection header (%q)", ErrBadExport, pl.n, `{"memory_export":{...}}`)
	}
	im.read++
	im.st.Read++
	if im.skip {
		im.st.Ignored++
		return nil
	}
	im.pending = append(im.pending, pl.doc)
	if len(im.pending) >= im.opts.BatchSize {
		return im.flush()
	}
	return nil
}

// parsedLine is a decoded line of an export: a header, an end line, a document, or why it
// cannot be read.
type parsedLine struct {
	n      int   // its number, from 1
	off    int64 // the byte offset where it starts
	size   int   // its bytes in the input, its ending included
	header *ExportHeader
	end    *ExportEnd
	doc    Document
	err    error
}

// decodeChunk is how many lines Import hands over from its decoder at a time.
const decodeChunk = 256

// decodeExport reads and decodes the lines of r and emits them, until the end of r, a
// line that cannot be read (emitted with its error), or emit reports false.
func decodeExport(r io.Reader, emit func(parsedLine) bool) {
	br := bufio.NewReaderSize(r, 1<<20)
	var buf []byte
	var off int64
	for n := 1; ; n++ {
		line, size, ended, err := readExportLine(br, buf[:0])
		buf = line
		if err == io.EOF {
			return
		}
		if err != nil {
			emit(parsedLine{n: n, off: off, err: fmt.Errorf("memory: import, line %d (byte %d): %w", n, off, err)})
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			off += int64(size)
			continue
		}
		pl := parseExportLine(line, n)
		pl.off, pl.size = off, size
		if pl.err != nil && !ended { // the input ends inside this line
			pl.err = fmt.Errorf("%w: truncated: the input is cut at byte %d, inside line %d (which starts at byte %d, %d bytes read of it)",
				ErrBadExport, off+int64(size), n, off, size)
		}
		if !emit(pl) || pl.err != nil {
			return
		}
		off += int64(size)
	}
}

// embeddingKey starts the vector of a document line as Export writes it (last).
var embeddingKey = []byte(`,"embedding":[`)

// parseExportLine decodes line n of an export.
func parseExportLine(line []byte, n int) parsedLine {
	if bytes.HasPrefix(line, []byte(`{"memory_export`)) {
		var el exportLine
		if err := json.Unmarshal(line, &el); err != nil || (el.Header == nil) == (el.End == nil) {
			return parsedLine{n: n, err: fmt.Errorf("%w: line %d: an unreadable header or end line", ErrBadExport, n)}
		}
		return parsedLine{n: n, header: el.Header, end: el.End}
	}
	var d importDoc
	// The vector, written last, is parsed by hand (encoding/json's float decoding is several
	// times slower); any other layout, or a value strconv refuses, takes the general way.
	fast := false
	if i := bytes.LastIndex(line, embeddingKey); i > 0 && bytes.HasSuffix(line, []byte("]}")) {
		if vec, ok := parseFloats(line[i+len(embeddingKey) : len(line)-2]); ok {
			if json.Unmarshal(append(line[:i:i], '}'), &d) == nil {
				d.Embedding, fast = vec, true
			} else {
				d = importDoc{}
			}
		}
	}
	if !fast {
		if err := json.Unmarshal(line, &d); err != nil {
			return parsedLine{n: n, err: fmt.Errorf("%w: line %d: %v", ErrBadExport, n, err)}
		}
	}
	return parsedLine{n: n, doc: Document{ID: d.ID, Title: d.Title, Text: d.Text, Metadata: d.Metadata, Source: d.Source, Embedding: d.Embedding}}
}

// parseFloats parses a comma-separated list of float32 numbers; ok false when any is not one.
func parseFloats(b []byte) ([]float32, bool) {
	if len(bytes.TrimSpace(b)) == 0 {
		return []float32{}, true
	}
	out := make([]float32, 0, bytes.Count(b, []byte(","))+1)
	for {
		field, rest, more := bytes.Cut(b, []byte(","))
		f, err := strconv.ParseFloat(string(bytes.TrimSpace(field)), 32)
		if err != nil {
			return nil, false
		}
		out = append(out, float32(f))
		if !more {
			break
		}
		b = rest
	}
	return out, true
}

// flush writes the pending documents that are not stored identically, in one Upsert.
func (im *importer) flush() error {
	if len(im.pending) == 0 {
		return nil
	}
	if err := im.ctx.Err(); err != nil {
		return err
	}
	var changed []Document
	var err error
	if cs := im.m.cluster; cs != nil {
		changed, err = cs.changedDocs(im.ctx, im.col, im.pending)
	} else {
		changed, err = im.m.changedDocs(im.col, im.pending)
	}
	if err != nil {
		return err
	}
	if len(changed) > 0 {
		if err := im.m.Collection(im.col).Upsert(im.ctx, changed...); err != nil {
			return fmt.Errorf("memory: import into collection %s (documents %s to %s): %w", store.ShowKey(im.col), store.ShowKey(im.pending[0].ID), store.ShowKey(im.pending[len(im.pending)-1].ID), err)
		}
	}
	im.st.Stored += len(changed)
	im.st.Unchanged += len(im.pending) - len(changed)
	clear(im.pending)
	im.pending = im.pending[:0]
	if im.opts.Progress != nil {
		im.opts.Progress(*im.st)
	}
	return nil
}

// changedDocs returns the documents of docs that collection col does not hold identically,
// read in one transaction.
func (m *Memory) changedDocs(col string, docs []Document) ([]Document, error) {
	var out []Document
	err := m.db.View(func(tx *store.Tx) error {
		for _, d := range docs {
			r, err := tx.Record(col, d.ID)
			if err != nil {
				return err
			}
			same := r != nil && r.Title == d.Title && r.Text == d.Text && sameMeta(r.Metadata, d.Metadata, d.Source)
			if same && d.Embedding != nil {
				var v []float32
				if len(r.Chunks) == 0 {
					if v, err = tx.Vector(col, d.ID); err != nil {
						return err
					}
				}
				same = slices32Equal(v, d.Embedding)
			}
			if !same {
				out = append(out, d)
			}
		}
		return nil
	})
	return out, err
}

// sameMeta reports whether stored metadata equals a document's metadata with its source.
func sameMeta(stored, md map[string]any, source string) bool {
	if source != "" {
		if s, ok := md[sourceKey]; !ok || s != source {
			md = maps.Clone(md)
			if md == nil {
				md = map[string]any{}
			}
			md[sourceKey] = source
		}
	}
	if len(stored) == 0 && len(md) == 0 {
		return true
	}
	return reflect.DeepEqual(stored, md)
}

func slices32Equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkImportEmbedder checks that the store's recorded embedder made the vectors of an
// export's collection (h.Embedder nil: it has none, any store takes it).
func (m *Memory) checkImportEmbedder(h *ExportHeader) error {
	x := h.Embedder
	if x == nil {
		return nil
	}
	rec := m.man.Embedder
	if rec == nil {
		return fmt.Errorf("%w: collection %q of the export holds vectors of %q (dim %d); the store has no embedder: open it with that one (or, for vectors made elsewhere, vectorstore.NewVectorsOnly(%q, %d))",
			ErrEmbedderMismatch, h.Collection, x.ID, x.Dim, x.ID, x.Dim)
	}
	match := rec.Dim == x.Dim && (rec.ID == x.ID || ((rec.Precomputed || x.Precomputed) && modelName(rec.ID) == modelName(x.ID)))
	if !match {
		return fmt.Errorf("%w: collection %q of the export holds vectors of %q (dim %d); the store's are of %q (dim %d)",
			ErrEmbedderMismatch, h.Collection, x.ID, x.Dim, rec.ID, rec.Dim)
	}
	return nil
}
