package chunker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// defaultMaxFileSize is the default size above which Walk skips a file.
const defaultMaxFileSize = 1 << 20

// Skip reasons counted in WalkSummary.Skipped.
const (
	SkipIgnored     = "gitignore"    // matched a .gitignore rule
	SkipDir         = "skipped-dir"  // .git, vendor, node_modules and WalkOptions.SkipDirs
	SkipBinary      = "binary"       // NUL bytes
	SkipInvalidUTF8 = "invalid-utf8" // not UTF-8
	SkipTooLarge    = "too-large"    // over WalkOptions.MaxFileSize
	SkipUnsupported = "unsupported"  // no known language (see WalkOptions.AllFiles)
	SkipNotRegular  = "not-regular"  // symlinks, devices, sockets
)

// defaultSkipDirs are never walked into.
var defaultSkipDirs = []string{".git", ".hg", ".svn", "vendor", "node_modules"}

// WalkOptions configure [Walk]. The zero value is ready to use.
type WalkOptions struct {
	// Code configures the chunking of each file.
	Code CodeOptions
	// MaxFileSize skips larger files (default 1 MiB; negative: no limit).
	MaxFileSize int64
	// SkipDirs are directory names never entered, in addition to .git, .hg, .svn, vendor
	// and node_modules.
	SkipDirs []string
	// AllFiles also chunks files of unknown languages (line-based); by default they are
	// skipped as SkipUnsupported.
	AllFiles bool
	// NoGitignore disables .gitignore handling.
	NoGitignore bool
}

// WalkSummary counts what [Walk] did.
type WalkSummary struct {
	Files  int   `json:"files"`  // files chunked
	Bytes  int64 `json:"bytes"`  // their total size
	Chunks int   `json:"chunks"` // chunks produced
	// ChunksByLanguage and FilesByLanguage count per language.
	ChunksByLanguage map[string]int `json:"chunks_by_language"`
	FilesByLanguage  map[string]int `json:"files_by_language"`
	// Skipped counts skipped files and directories by reason (the Skip constants).
	Skipped map[string]int `json:"skipped"`
}

// Walk chunks every file under root, calling fn with each file's path (relative to root,
// slash-separated) and chunks, in lexical order. It honours .gitignore files (in root and
// below), never enters .git, vendor or node_modules, and skips binary, invalid UTF-8,
// oversized and (unless opts.AllFiles) unknown-language files, counting reasons in the
// summary. An error from fn stops the walk and is returned; so is ctx's error.
func Walk(ctx context.Context, root string, opts WalkOptions, fn func(path string, chunks []Chunk) error) (WalkSummary, error) {
	sum := WalkSummary{
		ChunksByLanguage: map[string]int{},
		FilesByLanguage:  map[string]int{},
		Skipped:          map[string]int{},
	}
	info, err := os.Stat(root)
	if err != nil {
		return sum, fmt.Errorf("chunker: walk %s: %w", root, err)
	}
	if !info.IsDir() {
		return sum, walkFile(root, filepath.Base(root), info, opts, &sum, fn)
	}
	maxSize := opts.MaxFileSize
	if maxSize == 0 {
		maxSize = defaultMaxFileSize
	}
	skip := map[string]bool{}
	for _, d := range append(append([]string{}, defaultSkipDirs...), opts.SkipDirs...) {
		skip[d] = true
	}
	ig := &ignore{}
	opts.MaxFileSize = maxSize
	err = walkDir(ctx, root, "", ig, skip, opts, &sum, fn)
	return sum, err
}

func walkDir(ctx context.Context, root, rel string, ig *ignore, skip map[string]bool, opts WalkOptions, sum *WalkSummary, fn func(string, []Chunk) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Join(root, filepath.FromSlash(rel))
	if !opts.NoGitignore {
		if b, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err == nil {
			ig.Add(rel, string(b))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("chunker: walk %s: %w", dir, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		name := e.Name()
		r := name
		if rel != "" {
			r = rel + "/" + name
		}
		if e.IsDir() {
			if skip[name] {
				sum.Skipped[SkipDir]++
				continue
			}
			if !opts.NoGitignore && ig.Match(r, true) {
				sum.Skipped[SkipIgnored]++
				continue
			}
			if err := walkDir(ctx, root, r, ig, skip, opts, sum, fn); err != nil {
				return err
			}
			continue
		}
		if !opts.NoGitignore && ig.Match(r, false) {
			sum.Skipped[SkipIgnored]++
			continue
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("chunker: walk %s: %w", r, err)
		}
		if err := walkFile(filepath.Join(dir, name), r, info, opts, sum, fn); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

func walkFile(full, rel string, info fs.FileInfo, opts WalkOptions, sum *WalkSummary, fn func(string, []Chunk) error) error {
	if !info.Mode().IsRegular() {
		sum.Skipped[SkipNotRegular]++
		return nil
	}
	if opts.MaxFileSize > 0 && info.Size() > opts.MaxFileSize {
		sum.Skipped[SkipTooLarge]++
		return nil
	}
	lang := LanguageOf(rel)
	if opts.Code.Language != "" {
		lang = opts.Code.Language
	}
	if lang == "" && !opts.AllFiles {
		sum.Skipped[SkipUnsupported]++
		return nil
	}
	src, err := os.ReadFile(full)
	if err != nil {
		return fmt.Errorf("chunker: walk %s: %w", rel, err)
	}
	chunks, err := Code(rel, src, opts.Code)
	switch {
	case errors.Is(err, ErrBinary):
		sum.Skipped[SkipBinary]++
		return nil
	case errors.Is(err, ErrInvalidUTF8):
		sum.Skipped[SkipInvalidUTF8]++
		return nil
	case err != nil:
		return err
	}
	language := "text"
	if len(chunks) > 0 {
		language = chunks[0].Language
	}
	sum.Files++
	sum.Bytes += int64(len(src))
	sum.Chunks += len(chunks)
	sum.FilesByLanguage[language]++
	sum.ChunksByLanguage[language] += len(chunks)
	if len(chunks) == 0 {
		return nil
	}
	return fn(filepath.ToSlash(rel), chunks)
}

// String formats the summary on one line.
func (s WalkSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d files, %d bytes, %d chunks", s.Files, s.Bytes, s.Chunks)
	langs := make([]string, 0, len(s.ChunksByLanguage))
	for l := range s.ChunksByLanguage {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	for _, l := range langs {
		fmt.Fprintf(&b, "; %s %d", l, s.ChunksByLanguage[l])
	}
	reasons := make([]string, 0, len(s.Skipped))
	for r := range s.Skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(&b, "; skipped %s %d", r, s.Skipped[r])
	}
	return b.String()
}
