package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/chunker"
	"github.com/agentmem/memory/textextract"
)

// fileKind is how memory index reads a file, by its extension.
type fileKind int

const (
	kindUnknown fileKind = iota
	kindProse            // .txt, .md: one document, the first line its title
	kindJSONL            // .jsonl: a document per line
	kindCode             // a language of package chunker: a document per tree-sitter chunk
	kindHTML             // .html, .htm, .xhtml: title and visible text (package textextract)
	kindPDF              // .pdf: a document per page with text (package textextract)
)

// kindOf is the kind of a path by its extension.
func kindOf(path string) fileKind {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".txt", ".md":
		return kindProse
	case ".jsonl":
		return kindJSONL
	}
	switch textextract.FormatOf(path) {
	case textextract.HTML:
		return kindHTML
	case textextract.PDF:
		return kindPDF
	}
	if chunker.LanguageOf(path) != "" {
		return kindCode
	}
	return kindUnknown
}

// maxCodeFileBytes is the largest code file index chunks (as chunker.Walk, for --code): a
// bigger one is most often generated or minified.
const maxCodeFileBytes = 1 << 20

// Reasons a file or folder is skipped, as the summary groups them.
const (
	skipHidden     = "hidden"
	skipStore      = "the store itself"
	skipBinary     = "binary"
	skipUnknown    = "unknown type"
	skipCodeOff    = "code, --auto-code=false"
	skipVendored   = "code under vendor/ or node_modules/"
	skipSymlinkDir = "symlink to a folder, not followed"
	skipBrokenLink = "broken symlink"
	skipNotRegular = "not a regular file"
	skipUnreadable = "unreadable"
	skipNotUTF8    = "not UTF-8 text"
	skipEmpty      = "empty"
	skipEncrypted  = "encrypted"
	skipMalformed  = "damaged or not of its type"
	skipNoText     = "no text"
	skipNoPDFText  = "no text (scanned pages without a text layer?)"
	skipTimeout    = "extraction timed out"
)

// skipTooLarge is the reason of a file over a cap of max bytes.
func skipTooLarge(max int64) string { return fmt.Sprintf("over %d MiB", max>>20) }

// skippedEntry is a file or folder index did not read.
type skippedEntry struct {
	path   string
	dir    bool
	reason string // one of the skip constants: the summary groups by it
	detail string // what the verbose list adds (an error)
}

// group is the type the summary counts an entry under: its extension, "folder", or
// "no extension".
func (e skippedEntry) group() string {
	if e.dir {
		return "folder"
	}
	if ext := strings.ToLower(filepath.Ext(e.path)); ext != "" && ext != filepath.Base(e.path) {
		return ext
	}
	return "no extension"
}

// skipReport gathers what a run skipped, to say it at the end: nothing is skipped
// silently.
type skipReport struct {
	entries []skippedEntry
}

func (r *skipReport) add(path string, dir bool, reason, detail string) {
	r.entries = append(r.entries, skippedEntry{path: path, dir: dir, reason: reason, detail: detail})
}

// unreadable lists the paths that could not be read (their documents are kept by --sync).
func (r *skipReport) unreadable() []string {
	var out []string
	for _, e := range r.entries {
		if e.reason == skipUnreadable {
			out = append(out, e.path)
		}
	}
	return out
}

// write says on w, in one line, how many files and folders were skipped, grouped by type
// and reason, most first ("skipped 3 files: 2 .bin (binary), 1 .xyz (unknown type)"); with
// verbose, then each one with its reason.
func (r *skipReport) write(w io.Writer, verbose bool) {
	if len(r.entries) == 0 {
		return
	}
	type key struct{ group, reason string }
	counts := map[key]int{}
	files, dirs := 0, 0
	for _, e := range r.entries {
		counts[key{e.group(), e.reason}]++
		if e.dir {
			dirs++
		} else {
			files++
		}
	}
	keys := make([]key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if d := counts[b] - counts[a]; d != 0 {
			return d
		}
		if c := strings.Compare(a.group, b.group); c != 0 {
			return c
		}
		return strings.Compare(a.reason, b.reason)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s (%s)", counts[k], k.group, k.reason)
	}
	var what []string
	if files > 0 {
		what = append(what, plural(files, "file", "files"))
	}
	if dirs > 0 {
		what = append(what, plural(dirs, "folder", "folders"))
	}
	hint := ""
	if !verbose {
		hint = " (-v lists them)"
	}
	fmt.Fprintf(w, "skipped %s: %s%s\n", strings.Join(what, " and "), strings.Join(parts, ", "), hint)
	if !verbose {
		return
	}
	for _, e := range r.entries {
		p := e.path
		if e.dir {
			p += string(filepath.Separator)
		}
		if e.detail != "" {
			fmt.Fprintf(w, "  skipped %s: %s: %s\n", p, e.reason, e.detail)
		} else {
			fmt.Fprintf(w, "  skipped %s: %s\n", p, e.reason)
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// walkOptions say which files a walk takes.
type walkOptions struct {
	autoCode bool   // code files (else skipped as skipCodeOff)
	store    string // the store's folder (sourceOf), not walked into
}

// collectFiles lists the files to index under root (a folder, walked recursively, or a
// file), in lexical order, and reports every other file and folder to rep with the reason:
// the store's own folder, hidden folders (and hidden files, but for .txt, .md and .jsonl ones, read as before),
// symlinks to folders, files of unknown types (binary or not), code files when auto code
// chunking is off or under vendor/ or node_modules/, files over the caps of their kind,
// unreadable ones. A root that cannot be read is an error.
func collectFiles(root string, wo walkOptions, rep *skipReport) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				if errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("%s: no such file or folder (PATH is a file or a folder to index): %w", root, fs.ErrNotExist)
				}
				return err
			}
			rep.add(p, d != nil && d.IsDir(), skipUnreadable, err.Error())
			return nil
		}
		hidden := p != root && strings.HasPrefix(d.Name(), ".")
		if d.IsDir() {
			switch {
			case hidden:
				rep.add(p, true, skipHidden, "")
				return filepath.SkipDir
			case wo.store != "" && sourceOf(p) == wo.store:
				rep.add(p, true, skipStore, "")
				return filepath.SkipDir
			}
			return nil
		}
		if reason, detail := classify(p, d, hidden, wo); reason != "" {
			rep.add(p, reason == skipSymlinkDir, reason, detail)
			return nil
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// classify is the reason a file of a walk is not indexed ("" when it is).
func classify(p string, d fs.DirEntry, hidden bool, wo walkOptions) (reason, detail string) {
	var info fs.FileInfo
	var err error
	if d.Type()&fs.ModeSymlink != 0 {
		if info, err = os.Stat(p); err != nil {
			return skipBrokenLink, err.Error()
		}
		if info.IsDir() {
			return skipSymlinkDir, ""
		}
	} else if info, err = d.Info(); err != nil {
		return skipUnreadable, err.Error()
	}
	if !info.Mode().IsRegular() {
		return skipNotRegular, info.Mode().Type().String()
	}
	kind := kindOf(p)
	switch {
	case kind == kindProse || kind == kindJSONL:
		return "", "" // as before: no cap, hidden ones too
	case hidden:
		return skipHidden, ""
	case kind == kindCode && !wo.autoCode:
		return skipCodeOff, ""
	case kind == kindCode && vendored(p):
		return skipVendored, ""
	case kind == kindCode && info.Size() > maxCodeFileBytes:
		return skipTooLarge(maxCodeFileBytes), fmt.Sprintf("%d bytes", info.Size())
	case (kind == kindHTML || kind == kindPDF) && info.Size() > textextract.DefaultMaxFileBytes:
		return skipTooLarge(textextract.DefaultMaxFileBytes), fmt.Sprintf("%d bytes", info.Size())
	case kind == kindUnknown:
		if looksBinary(p) {
			return skipBinary, ""
		}
		return skipUnknown, ""
	}
	return "", ""
}

// vendored reports whether a path lies under a vendor or node_modules folder (third-party
// code, which --code's walk leaves out too).
func vendored(p string) bool {
	for _, part := range strings.Split(filepath.ToSlash(filepath.Dir(p)), "/") {
		if part == "vendor" || part == "node_modules" {
			return true
		}
	}
	return false
}

// looksBinary reports whether the first 8 KiB of a file hold a NUL byte or are not UTF-8
// (an unreadable file counts as binary: it is skipped either way).
func looksBinary(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return true
	}
	defer f.Close()
	buf := make([]byte, 8<<10)
	n, _ := io.ReadFull(f, buf)
	buf = buf[:n]
	if slices.Contains(buf, 0) {
		return true
	}
	if n == len(buf) { // a character may be cut at the end
		for i := 0; i < utf8.UTFMax && len(buf) > 0 && !utf8.RuneStart(buf[len(buf)-1]); i++ {
			buf = buf[:len(buf)-1]
		}
		if len(buf) > 0 {
			buf = buf[:len(buf)-1]
		}
	}
	return !utf8.Valid(buf)
}

// skipFile reports file i as not stored, for the reason (and its detail), in the run's
// messages and in the summary of skipped files.
func (ix *indexer) skipFile(i int, reason, detail string) {
	msg := reason
	if detail != "" {
		msg += ": " + detail
	}
	ix.skip(docLoc{file: i}, "%s", msg)
	if ix.skips != nil {
		ix.skips.add(ix.files[i], false, reason, detail)
	}
}

// grow counts n more documents than the scan expected (a file that gave several).
func (ix *indexer) grow(n int) {
	if n <= 0 {
		return
	}
	ix.scan.total += n
	if ix.prog != nil {
		ix.prog.total += n
		if ix.prog.bar != nil {
			ix.prog.bar.ChangeMax(ix.prog.total)
		}
	}
}

// indexCodeFile chunks file i with tree-sitter (package chunker, as --code does) and
// queues a document per chunk: id "PATH#Lstart-Lend", title the path and the chunk's
// qualified name, metadata path, language, kind, name, lines (memory.CodeDocuments), and
// the file's absolute path as the source, so re-indexing it replaces its chunks.
func (ix *indexer) indexCodeFile(i int) error {
	path := ix.files[i]
	b, err := os.ReadFile(path)
	switch {
	case err != nil:
		ix.skipFile(i, skipUnreadable, err.Error())
		return nil
	case len(b) > maxCodeFileBytes:
		ix.skipFile(i, skipTooLarge(maxCodeFileBytes), fmt.Sprintf("%d bytes", len(b)))
		return nil
	}
	chunks, err := chunker.Code(path, b, chunker.CodeOptions{})
	switch {
	case errors.Is(err, chunker.ErrBinary):
		ix.skipFile(i, skipBinary, "")
		return nil
	case errors.Is(err, chunker.ErrInvalidUTF8):
		ix.skipFile(i, skipNotUTF8, "")
		return nil
	case err != nil:
		ix.skipFile(i, skipUnreadable, err.Error())
		return nil
	}
	docs := memory.CodeDocuments(filepath.ToSlash(path), chunks)
	if len(docs) == 0 {
		ix.skipFile(i, skipEmpty, "")
		return nil
	}
	src := sourceOf(path)
	ix.claim([]string{src})
	ix.grow(len(docs) - 1)
	for _, d := range docs {
		d.Source = src
		line, _ := d.Metadata["start_line"].(float64)
		if err := ix.add(d, docLoc{file: i, line: int(line)}); err != nil {
			return err
		}
	}
	return nil
}

// indexExtracted extracts the text of an HTML or PDF file (package textextract) and queues
// its documents: an HTML page is one (id the path, title its <title> or first <h1>), a PDF
// one per page with text (id "PATH#page=N", title the PDF's Title, metadata page and
// pages). The title falls back to the file's name. The source is the file's absolute
// path.
func (ix *indexer) indexExtracted(i int) error {
	path := ix.files[i]
	doc, err := textextract.File(ix.ctx, path, textextract.Options{})
	if err != nil {
		if ctxErr := ix.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		reason := extractSkipReason(err, kindOf(path))
		detail := ""
		if reason == skipUnreadable || reason == skipMalformed || reason == skipEncrypted {
			detail = extractDetail(err)
		}
		ix.skipFile(i, reason, detail)
		return nil
	}
	if doc.Truncated {
		fmt.Fprintf(ix.stderr, "warning: %s: text cut at %d pages or %d MiB (of %d pages read)\n",
			path, textextract.DefaultMaxPages, textextract.DefaultMaxTextBytes>>20, doc.PageCount)
	}
	if len(doc.DamagedPages) > 0 {
		fmt.Fprintf(ix.stderr, "warning: %s: damaged pages %v: their text is stored up to the damage\n", path, doc.DamagedPages)
	}
	id := filepath.ToSlash(path)
	title := doc.Title
	if title == "" {
		title = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	src := sourceOf(path)
	ix.claim([]string{src})
	if doc.Format == textextract.HTML {
		return ix.add(memory.Document{ID: id, Title: title, Text: doc.Text(), Source: src,
			Metadata: map[string]any{"path": id, "format": string(doc.Format)}}, docLoc{file: i})
	}
	ix.grow(len(doc.Pages) - 1)
	for _, p := range doc.Pages {
		d := memory.Document{ID: fmt.Sprintf("%s#page=%d", id, p.Number), Title: title, Text: p.Text, Source: src,
			Metadata: map[string]any{"path": id, "format": string(doc.Format), "page": float64(p.Number), "pages": float64(doc.PageCount)}}
		if err := ix.add(d, docLoc{file: i}); err != nil {
			return err
		}
	}
	return nil
}

// extractDetail is what an extraction error says beyond its reason: its text without the
// "textextract: ..." sentinel it starts with.
func extractDetail(err error) string {
	msg := err.Error()
	for _, e := range []error{textextract.ErrEncrypted, textextract.ErrMalformed, textextract.ErrUnsupported} {
		if rest, ok := strings.CutPrefix(msg, e.Error()+": "); ok {
			return rest
		}
	}
	return msg
}

// extractSkipReason is the reason a file of the kind whose extraction failed is skipped.
func extractSkipReason(err error, kind fileKind) string {
	switch {
	case errors.Is(err, textextract.ErrEncrypted):
		return skipEncrypted
	case errors.Is(err, textextract.ErrNoText) && kind == kindPDF:
		return skipNoPDFText
	case errors.Is(err, textextract.ErrNoText):
		return skipNoText
	case errors.Is(err, textextract.ErrTooLarge):
		return skipTooLarge(textextract.DefaultMaxFileBytes)
	case errors.Is(err, textextract.ErrTimeout):
		return skipTimeout
	case errors.Is(err, textextract.ErrMalformed), errors.Is(err, textextract.ErrUnsupported):
		return skipMalformed
	}
	return skipUnreadable
}
