package memory

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/weaviate"
)

// Replacements on a cluster (Replace, ReplaceSource, BeginReplace/Commit, and AddCode,
// which is built on them). Weaviate has no transactions, so a replacement on a cluster is
// not atomic as the embedded store's is. It is ordered so that a failure or a crash at any
// point never leaves fewer documents than before or after it:
//
//  1. The filter is checked and translated first: a Where Weaviate cannot express fails
//     (ErrNotSupported naming it) before anything is written.
//  2. The new documents are upserted (as Upsert: validated and embedded before the first
//     write, then written in batches at the store's consistency level, each document's
//     stale chunks dropped after its new ones are stored).
//  3. Only then are the documents the filter matches listed, and those neither among the
//     new documents nor upserted through the Replacement deleted.
//
// A failure in step 2 leaves the old documents and some of the new (an Upsert retried
// converges); a failure or crash between 2 and 3, or during 3, leaves the new documents and
// some or all of the old ones (the replacement retried removes them). Readers meanwhile may
// see both the old and the new documents, never neither. Documents that others write
// meanwhile and that match the filter are removed by step 3 if it lists them.

// replaceHook, set by tests only, is called by a replacement on a cluster between its
// upsert and its deletes: its error stops the replacement there, as a crash would.
var replaceHook func() error

// replaceWith is Collection.replace for either backend: where is the filter cw was
// compiled from (a store on a cluster translates it to Weaviate's filter).
func (c *Collection) replaceWith(ctx context.Context, where Where, cw docfilter.Compiled, kept map[string]struct{}, docs []Document) (int, error) {
	if cs := c.m.cluster; cs != nil {
		return cs.replace(ctx, c.m, c.name, where, kept, docs)
	}
	return c.replace(ctx, cw, kept, docs)
}

// replace is a replacement on a cluster (see above): upsert docs, then remove the
// documents where matches that are neither among docs nor in kept. It returns how many it
// removed.
func (cs *clusterStore) replace(ctx context.Context, m *Memory, col string, where Where, kept map[string]struct{}, docs []Document) (int, error) {
	if m.closed.Load() {
		return 0, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := validCollectionName(col); err != nil {
		return 0, err
	}
	if _, err := translateWhere(where, nil); err != nil { // what Weaviate cannot express, before any write
		return 0, err
	}
	put := make(map[string]bool, len(docs))
	if len(docs) > 0 {
		if err := cs.put(ctx, m, col, docs, true); err != nil {
			return 0, err
		}
		for _, d := range docs {
			put[d.ID] = true
		}
	}
	if replaceHook != nil {
		if err := replaceHook(); err != nil {
			return 0, err
		}
	}
	cc, err := cs.existing(ctx, col)
	if err != nil || cc == nil {
		return 0, err
	}
	wf, err := cs.filter(ctx, cc, where)
	if err != nil || wf.none {
		return 0, err
	}
	var gone []string
	f := headFilter
	if !wf.all {
		f = weaviate.AllOf(headFilter, wf.f)
	}
	if err := cs.eachHead(ctx, cc, f, nil, func(h weaviate.Hit) error {
		if _, ok := kept[h.ID]; !ok && !put[h.ID] {
			gone = append(gone, h.ID)
		}
		return nil
	}); err != nil {
		return 0, err
	}
	if err := cs.delete(ctx, m, col, gone); err != nil {
		return 0, err
	}
	return len(gone), nil
}

// eachHead calls fn with the first object (one per document) of each document that f
// matches, with the properties fields, once per document, in pages sorted by id (each
// page after the last id of the one before: Weaviate's cursor reads one replica's shards
// only). A page whose answer is over the client's cap on a body (large records) is asked
// again in smaller pages, down to one document.
func (cs *clusterStore) eachHead(ctx context.Context, cc *clusterClass, f weaviate.Filter, fields []string, fn func(weaviate.Hit) error) error {
	page := 500
	seen := map[string]bool{}
	last, first := "", true
	for {
		q := weaviate.Query{Class: cc.name, Consistency: cs.level, Limit: page, Where: f, SortBy: weaviate.PropID, Fields: fields}
		if !first {
			q.Where = weaviate.AllOf(f, weaviate.Where(weaviate.PropID, weaviate.GreaterThan, last))
		}
		hits, err := cs.wc.Fetch(ctx, q)
		if err != nil && page > 1 && errors.Is(err, weaviate.ErrInvalid) && strings.Contains(err.Error(), "response body over") {
			page = max(1, page/8)
			continue
		}
		if err != nil {
			return cs.classErr(err)
		}
		for _, h := range hits {
			if seen[h.ID] {
				continue
			}
			seen[h.ID] = true
			if err := fn(h); err != nil {
				return err
			}
		}
		if len(hits) > 0 {
			last, first = hits[len(hits)-1].ID, false
		}
		if len(hits) < page {
			return nil
		}
	}
}

// sources is Collection.Sources on a cluster: the distinct Source of the documents that
// have one (read from their records, as the embedded store reads them), sorted.
func (cs *clusterStore) sources(ctx context.Context, m *Memory, col string) ([]string, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cc, err := cs.existing(ctx, col)
	if err != nil || cc == nil {
		return nil, err
	}
	props, err := cs.filterProps(ctx, cc, Where{sourceKey: ""})
	if err != nil {
		return nil, err
	}
	out := []string{}
	p := metaProp(sourceKey, 's')
	if _, ok := props[p]; !ok { // no document has a string source
		return out, nil
	}
	// Every document's record (Weaviate has no filter for "has the property"): O(documents),
	// as the embedded store's scan of its records.
	set := map[string]bool{}
	if err := cs.eachHead(ctx, cc, headFilter, []string{propRec}, func(h weaviate.Hit) error {
		r, err := decodeRec(h.ID, h.Props[propRec])
		if err != nil {
			return err
		}
		if src := recordSource(r); src != "" {
			set[src] = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}
