package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/memory"
	"github.com/schollz/progressbar/v3"
)

func init() {
	register(command{
		name:    "index",
		summary: "add documents from .txt/.md/.jsonl files or folders to a store",
		run:     runIndex,
	})
}

func runIndex(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("index", stderr)
	var sf storeFlags
	sf.register(fs, true)
	col := fs.String("collection", "", "collection (default: the default collection)")
	batch := fs.Int("batch", 256, "documents per write")
	code := fs.String("code", "", "index a source tree: chunk it with tree-sitter (respects .gitignore)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if sf.dir == "" || (fs.NArg() == 0 && *code == "") {
		fmt.Fprintln(stderr, "usage: memory index --store DIR [--collection C] PATH...\n       memory index --store DIR [--collection C] --code DIR")
		return errUsage
	}
	m, err := sf.open(sf.dir, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	c := m.Collection(*col)
	if *code != "" {
		return indexCode(ctx, c, *code, *batch, stdout, stderr)
	}

	var files []string
	for _, p := range fs.Args() {
		found, err := collectFiles(p)
		if err != nil {
			return err
		}
		files = append(files, found...)
	}
	if len(files) == 0 {
		return fmt.Errorf("no .txt, .md or .jsonl files under %v", fs.Args())
	}
	total, err := countDocs(files)
	if err != nil {
		return err
	}
	prog := newProgress(stderr, total, "indexing")
	start := time.Now()
	var pending []memory.Document
	done, skipped := 0, 0
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		if err := c.Upsert(ctx, pending...); err != nil {
			return err
		}
		done += len(pending)
		prog.add(len(pending))
		pending = pending[:0]
		return nil
	}
	for _, f := range files {
		err := readDocs(f, func(d memory.Document) error {
			pending = append(pending, d)
			if len(pending) >= *batch {
				return flush()
			}
			return nil
		}, func(reason string) { skipped++; fmt.Fprintf(stderr, "skip: %s\n", reason) })
		if err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	prog.finish()
	el := time.Since(start)
	fmt.Fprintf(stdout, "indexed %d documents into %q in %s (%.0f docs/s); %d skipped; collection now holds %d\n",
		done, c.Name(), el.Round(time.Millisecond), float64(done)/el.Seconds(), skipped, c.Count())
	return nil
}

func collectFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".txt", ".md", ".jsonl":
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

func countDocs(files []string) (int, error) {
	n := 0
	for _, f := range files {
		if strings.ToLower(filepath.Ext(f)) != ".jsonl" {
			n++
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			if len(strings.TrimSpace(sc.Text())) > 0 {
				n++
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
	}
	return n, nil
}

// jsonlDoc accepts BEIR ({"_id","title","text"}), Search-R1 ({"id","contents"}) and our own
// ({"id","title","text","metadata"}) lines.
type jsonlDoc struct {
	ID       string         `json:"id"`
	BeirID   string         `json:"_id"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	Contents string         `json:"contents"`
	Metadata map[string]any `json:"metadata"`
}

func (j jsonlDoc) document() memory.Document {
	d := memory.Document{ID: j.ID, Title: j.Title, Text: j.Text, Metadata: j.Metadata}
	if d.ID == "" {
		d.ID = j.BeirID
	}
	if d.Text == "" && j.Contents != "" {
		title, text, _ := strings.Cut(j.Contents, "\n")
		d.Title = strings.Trim(title, `"`)
		d.Text = text
	}
	return d
}

// readDocs reads one file: a .txt/.md file is one document (first line = title, id = the
// path), a .jsonl file one document per line.
func readDocs(path string, fn func(memory.Document) error, skip func(string)) error {
	if strings.ToLower(filepath.Ext(path)) != ".jsonl" {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !utf8.Valid(b) {
			skip(path + ": not UTF-8 text")
			return nil
		}
		title, text, _ := strings.Cut(string(b), "\n")
		title = strings.TrimSpace(strings.TrimLeft(title, "# "))
		if strings.TrimSpace(text) == "" && title == "" {
			skip(path + ": empty")
			return nil
		}
		return fn(memory.Document{ID: filepath.ToSlash(path), Title: title, Text: strings.TrimSpace(text),
			Metadata: map[string]any{"path": filepath.ToSlash(path)}})
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var j jsonlDoc
		if err := json.Unmarshal(line, &j); err != nil {
			skip(fmt.Sprintf("%s:%d: %v", path, n, err))
			continue
		}
		d := j.document()
		if d.ID == "" {
			skip(fmt.Sprintf("%s:%d: no id", path, n))
			continue
		}
		if err := fn(d); err != nil {
			var bad bool
			for _, e := range []error{memory.ErrEmptyText, memory.ErrInvalidUTF8, memory.ErrTooLarge, memory.ErrInvalidMetadata} {
				bad = bad || errors.Is(err, e)
			}
			if !bad {
				return err
			}
			skip(fmt.Sprintf("%s:%d: %v", path, n, err))
		}
	}
	return sc.Err()
}

// progress shows a bar with rate and ETA on a terminal, plain lines otherwise.
type progress struct {
	bar   *progressbar.ProgressBar
	w     io.Writer
	total int
	done  int
	last  time.Time
	start time.Time
	label string
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
	if time.Since(p.last) >= 2*time.Second || p.done == p.total {
		p.last = time.Now()
		rate := float64(p.done) / time.Since(p.start).Seconds()
		eta := time.Duration(float64(p.total-p.done)/rate) * time.Second
		fmt.Fprintf(p.w, "%s: %d/%d docs (%.0f docs/s, eta %s)\n", p.label, p.done, p.total, rate, eta.Round(time.Second))
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
	sum, err := c.AddCode(ctx, root, memory.CodeOptions{BatchSize: batch, Progress: func(p memory.CodeProgress) {
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
