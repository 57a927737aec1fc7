package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/memory/chunker"
)

// defaultCodeBatch is how many chunks AddCode upserts per call by default.
const defaultCodeBatch = 256

// maxReplaceSources caps the files whose chunks AddCode replaces in one transaction (the
// items of its filter's $in).
const maxReplaceSources = 1000

// CodeOptions configure [Collection.AddCode]. The zero value is ready to use.
type CodeOptions struct {
	// Walk selects and chunks the files (budget, language override, .gitignore...).
	Walk chunker.WalkOptions
	// BatchSize is how many chunks go to one Upsert (default 256).
	BatchSize int
	// IDPrefix is prepended to every document id and path (for example a repository name),
	// so that several trees can share a collection.
	IDPrefix string
	// Progress, when set, is called after each batch is stored.
	Progress func(CodeProgress)
}

// CodeProgress reports how far AddCode got.
type CodeProgress struct {
	Files  int    // files chunked so far
	Chunks int    // chunks stored so far
	Path   string // the last file chunked
}

// AddCode chunks the source tree under root with package chunker (tree-sitter, cAST) and
// upserts one document per chunk, in batches:
//
//   - ID: "<path>#L<start>-L<end>" (lines of the chunk, path relative to root, slash
//     separated, after opts.IDPrefix); if two chunks of a file span the same lines, the
//     later ones get "@<start byte>" appended. Ids are stable as long as the file does not
//     change, so indexing the same tree twice replaces rather than duplicates.
//   - Title: the path, then the chunk's qualified name when it has one.
//   - Text: [chunker.Chunk.EmbeddingText] (a short header, then the code).
//   - Metadata: path, language, kind, name, qualified_name, start_line, end_line.
//   - Source: the path, so DeleteWhere(ctx, Where{"source": path}) removes a file's chunks.
//
// Each file's chunks replace that file's earlier chunks atomically ([Collection.Replace]
// with its path as the source): re-indexing a changed file removes its chunks that are gone
// (their line-based ids changed) in the transaction that stores the new ones. Several small
// files share one transaction; a file with more chunks than opts.BatchSize is replaced with
// a [Replacement] (its earlier chunks stay until its last batch is stored). Files that
// disappeared from the tree are not touched (DeleteWhere their sources). On a store on a
// Weaviate cluster "atomically" does not hold: each replacement upserts a file's new chunks,
// then deletes its stale ones (see [Collection.Replace]).
//
// Chunks that are only whitespace are skipped. The zero CodeOptions is the default. It
// returns the walk summary; on error, the files of earlier batches stay replaced, and every
// other file keeps its earlier chunks (plus, for a file replaced in several batches, the
// batches stored).
func (c *Collection) AddCode(ctx context.Context, root string, opts CodeOptions) (chunker.WalkSummary, error) {
	o := opts
	batch := o.BatchSize
	if batch <= 0 {
		batch = defaultCodeBatch
	}
	var (
		docs   []Document
		srcs   []any // the sources (paths) of the files whose chunks are in docs
		files  int
		stored int
		last   string
	)
	progress := func() {
		if o.Progress != nil {
			o.Progress(CodeProgress{Files: files, Chunks: stored, Path: last})
		}
	}
	// flush replaces the chunks of the files in srcs with docs, in one transaction.
	flush := func() error {
		if len(srcs) == 0 {
			return nil
		}
		_, err := c.Replace(ctx, Where{sourceKey: map[string]any{"$in": srcs}}, docs...)
		if err != nil && !(len(docs) == 0 && errors.Is(err, ErrCollectionNotFound)) {
			return fmt.Errorf("memory: add code from %s: %w", root, err)
		}
		stored += len(docs)
		docs, srcs = docs[:0], srcs[:0]
		progress()
		return nil
	}
	sum, err := chunker.Walk(ctx, root, o.Walk, func(path string, chunks []chunker.Chunk) error {
		files++
		last = path
		src := o.IDPrefix + path
		fdocs := CodeDocuments(src, chunks)
		if len(docs)+len(fdocs) > batch || len(srcs) >= maxReplaceSources {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(fdocs) <= batch {
			docs = append(docs, fdocs...)
			srcs = append(srcs, src)
			return nil
		}
		// A file bigger than a batch: its batches, then its stale chunks go with the last.
		r, err := c.BeginReplace(Where{sourceKey: src})
		if err != nil {
			return err
		}
		for len(fdocs) > batch {
			if err := r.Upsert(ctx, fdocs[:batch]...); err != nil {
				return fmt.Errorf("memory: add code from %s: %w", root, err)
			}
			stored += batch
			fdocs = fdocs[batch:]
			progress()
		}
		if _, err := r.Commit(ctx, fdocs...); err != nil {
			return fmt.Errorf("memory: add code from %s: %w", root, err)
		}
		stored += len(fdocs)
		progress()
		return nil
	})
	if err != nil {
		return sum, err
	}
	return sum, flush()
}

// AddCode chunks and stores a source tree in the default collection; see
// [Collection.AddCode].
func (m *Memory) AddCode(ctx context.Context, root string, opts CodeOptions) (chunker.WalkSummary, error) {
	return m.Collection("").AddCode(ctx, root, opts)
}

// CodeDocuments turns the chunks of one file into documents the way AddCode does (path is
// used in ids, titles and metadata instead of the chunks' own Path).
func CodeDocuments(path string, chunks []chunker.Chunk) []Document {
	out := make([]Document, 0, len(chunks))
	seen := make(map[string]bool, len(chunks))
	for _, ch := range chunks {
		if ch.Size == 0 {
			continue
		}
		ch.Path = path
		id := fmt.Sprintf("%s#L%d-L%d", path, ch.StartLine, ch.EndLine)
		if seen[id] {
			id = fmt.Sprintf("%s@%d", id, ch.StartByte)
		}
		seen[id] = true
		title := path
		if ch.QualifiedName != "" {
			title += " " + ch.QualifiedName
		}
		out = append(out, Document{
			Source: path, // ReplaceSource(ctx, path, ...) re-indexes a file
			ID:     id,
			Title:  title,
			Text:   ch.EmbeddingText(),
			Metadata: map[string]any{
				"path":           path,
				"language":       ch.Language,
				"kind":           ch.Kind,
				"name":           ch.Name,
				"qualified_name": ch.QualifiedName,
				"start_line":     float64(ch.StartLine),
				"end_line":       float64(ch.EndLine),
			},
		})
	}
	return out
}
