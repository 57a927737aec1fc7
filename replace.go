package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/store"
)

// Replace replaces the documents that where matches with docs, atomically: in one
// transaction it removes every stored document that where matches and that is not among
// docs (by id), and upserts docs (all their chunks). Readers, and a crash or an error at
// any point, see the collection before or after, never in between: re-indexing a source
// with Replace(ctx, Where{"source": path}, docs...) never leaves it without its documents.
// It returns how many documents it removed (not counting those docs replaced in place).
//
// docs need not match where (one that does not is simply upserted). An empty where is
// ErrInvalidFilter; a bad document fails as Upsert does, writing nothing. Without docs it
// is DeleteWhere (a named collection that does not exist is ErrCollectionNotFound); with
// docs the collection is created when absent. A source too big for one transaction is
// replaced with [Collection.BeginReplace].
//
// On a store on a Weaviate cluster, which has no transactions, a replacement is not
// atomic: it upserts docs first, then lists the documents where matches and deletes those
// not among docs. A failure or crash part way leaves the old documents and some or all of
// the new, or the new and some or all of the old: never fewer than before or after, and
// the replacement retried completes it. Readers meanwhile may see old and new documents
// together. A Where Weaviate cannot express is ErrNotSupported before anything is written.
func (c *Collection) Replace(ctx context.Context, where Where, docs ...Document) (int, error) {
	cw, err := replaceFilter(where)
	if err != nil {
		return 0, err
	}
	return c.replaceWith(ctx, where, cw, nil, docs)
}

// ReplaceSource replaces the documents of source (Document.Source, the metadata key
// "source") with docs in one transaction: Replace with Where{"source": source}. A document
// without a Source gets source; one with another Source is ErrInvalidMetadata. An empty
// source is ErrInvalidFilter.
func (c *Collection) ReplaceSource(ctx context.Context, source string, docs ...Document) (int, error) {
	if source == "" {
		return 0, fmt.Errorf("%w: ReplaceSource needs a source", ErrInvalidFilter)
	}
	out := make([]Document, len(docs))
	for i, d := range docs {
		switch d.Source {
		case "":
			d.Source = source
		case source:
		default:
			return 0, fmt.Errorf("%w: document %s has Source %s, replacing source %s", ErrInvalidMetadata, store.ShowKey(d.ID), store.ShowKey(d.Source), store.ShowKey(source))
		}
		out[i] = d
	}
	return c.Replace(ctx, Where{sourceKey: source}, out...)
}

// replaceFilter compiles the filter of a replacement; an empty one is ErrInvalidFilter.
func replaceFilter(where Where) (docfilter.Compiled, error) {
	if len(where) == 0 {
		return docfilter.Compiled{}, fmt.Errorf("%w: a replacement needs a filter (DeleteCollection empties a collection)", ErrInvalidFilter)
	}
	return docfilter.Compile(where)
}

// replace upserts docs and removes, in the same transaction, the documents the compiled
// filter cw matches that are neither among docs nor in kept.
func (c *Collection) replace(ctx context.Context, cw docfilter.Compiled, kept map[string]struct{}, docs []Document) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return c.write(ctx, docs, true, func(s *colState, w *docWrite) ([]string, error) {
		matched, err := c.matching(ctx, s, cw)
		if err != nil {
			return nil, err
		}
		put := make(map[string]bool, len(w.docs))
		for _, d := range w.docs {
			put[d.ID] = true
		}
		gone := matched[:0]
		for _, id := range matched {
			if _, ok := kept[id]; !ok && !put[id] {
				gone = append(gone, id)
			}
		}
		return gone, nil
	})
}

// Replace replaces the documents of the default collection that where matches; see
// [Collection.Replace].
func (m *Memory) Replace(ctx context.Context, where Where, docs ...Document) (int, error) {
	return m.Collection("").Replace(ctx, where, docs...)
}

// ReplaceSource replaces the documents of source in the default collection; see
// [Collection.ReplaceSource].
func (m *Memory) ReplaceSource(ctx context.Context, source string, docs ...Document) (int, error) {
	return m.Collection("").ReplaceSource(ctx, source, docs...)
}

// Replacement is a replacement of the documents a filter matches by more documents than
// one transaction should hold (a corpus file of millions of lines). Each Upsert is one
// durable transaction, like [Collection.Upsert]; Commit upserts its own documents and
// removes, in one transaction, every document the filter matches that was not upserted
// through the Replacement. Until Commit the earlier documents stay: a crash or an error
// before it leaves them all, plus the documents already upserted (an upserted id that was
// stored is replaced in place), never fewer documents than were acknowledged. A replacement
// that is never committed needs no clean-up. It keeps the ids upserted through it (memory
// O(ids)). Documents that match the filter and that others write meanwhile are removed by
// Commit too. Its methods may be called from several goroutines. On a store on a Weaviate
// cluster Commit is not one transaction: it upserts its documents, then deletes the others
// the filter matches (see [Collection.Replace]); an error part way leaves documents to
// remove, never fewer than were acknowledged, and Commit may be called again.
type Replacement struct {
	c     *Collection
	where Where              // the filter
	cw    docfilter.Compiled // the filter, compiled

	mu       sync.Mutex
	kept     map[string]struct{}
	upserted int
	done     bool
}

// BeginReplace starts a replacement of the documents that where matches (see
// [Replacement]); it writes nothing. An empty where is ErrInvalidFilter.
func (c *Collection) BeginReplace(where Where) (*Replacement, error) {
	cw, err := replaceFilter(where)
	if err != nil {
		return nil, err
	}
	if err := c.m.writable(); err != nil {
		return nil, err
	}
	if c.m.cluster != nil { // what Weaviate cannot express is refused now, not at Commit
		if _, err := translateWhere(where, nil); err != nil {
			return nil, err
		}
	}
	return &Replacement{c: c, where: where, cw: cw, kept: map[string]struct{}{}}, nil
}

// BeginReplace starts a replacement in the default collection; see
// [Collection.BeginReplace].
func (m *Memory) BeginReplace(where Where) (*Replacement, error) {
	return m.Collection("").BeginReplace(where)
}

// Upsert stores docs in one durable transaction (as [Collection.Upsert]: all or none, and
// ErrIndexUpdate: stored) as part of the replacement: Commit keeps them. Commit also keeps
// the stored documents of ids whose Upsert failed (a rejected new version leaves the
// earlier one).
func (r *Replacement) Upsert(ctx context.Context, docs ...Document) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return ErrReplacementDone
	}
	// Noted even when the write fails: an error after the transaction (an index update)
	// leaves the documents stored, and keeping an id Commit could remove is never a loss.
	for _, d := range docs {
		r.kept[d.ID] = struct{}{}
	}
	err := r.c.Upsert(ctx, docs...)
	if err == nil || errors.Is(err, ErrIndexUpdate) { // stored
		r.upserted += len(docs)
	}
	return err
}

// Upserted is how many documents the replacement's Upsert calls have stored (durably).
func (r *Replacement) Upserted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.upserted
}

// Commit upserts docs and removes every document the filter matches that is neither among
// docs nor upserted through r, in one transaction, and returns how many it removed. On an
// error nothing of it is written and it may be called again, except ErrIndexUpdate (it is
// stored); after it the replacement is done (ErrReplacementDone).
func (r *Replacement) Commit(ctx context.Context, docs ...Document) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return 0, ErrReplacementDone
	}
	n, err := r.c.replaceWith(ctx, r.where, r.cw, r.kept, docs)
	if err != nil && !errors.Is(err, ErrIndexUpdate) {
		return 0, err
	}
	r.done = true // committed (ErrIndexUpdate: stored, and the index catches up on reopen)
	r.upserted += len(docs)
	r.kept = nil
	return n, err
}
