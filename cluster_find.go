package memory

import (
	"context"
	"errors"
	"sort"

	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/weaviate"
)

// Find on a cluster. The filters run here on the documents' records with the embedded
// store's compiled predicates, so every Where operator works (those Weaviate cannot say,
// $ne, $nin, $not_contains, $gt on strings, included) and WhereDocument is exact; a Where
// Weaviate can say also narrows the records read. Without IDs the documents come in id
// order as Go sorts strings (the embedded store's order), which is not Weaviate's: each call
// reads every record the Where leaves (O(documents), not O(Limit) as embedded) and keeps
// the first Offset+Limit after After.

// find is Collection.Find on a cluster, given the compiled filters (nil: none).
func (cs *clusterStore) find(ctx context.Context, m *Memory, col string, o FindOptions, where, whereDoc docfilter.Pred) ([]Document, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	cc, err := cs.existing(ctx, col)
	if err != nil || cc == nil {
		return []Document{}, err
	}
	match := func(r *store.Record) bool {
		return (where == nil || where(r)) && (whereDoc == nil || whereDoc(r))
	}
	doc := func(id string, r *store.Record) Document {
		return Document{ID: id, Title: r.Title, Text: r.Text, Metadata: r.Metadata, Source: recordSource(r)}
	}
	out := []Document{}
	if o.IDs != nil {
		seen := make(map[string]bool, len(o.IDs))
		ids := make([]string, 0, len(o.IDs))
		for _, id := range o.IDs {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		recs, err := cs.heads(ctx, cc, ids, nil)
		if err != nil {
			return nil, err
		}
		skip := o.Offset
		for _, id := range ids {
			r := recs[id]
			if r == nil || !match(r) {
				continue
			}
			if skip > 0 {
				skip--
				continue
			}
			out = append(out, doc(id, r))
			if o.Limit > 0 && len(out) == o.Limit {
				break
			}
		}
		return out, nil
	}
	f := headFilter
	if wf, err := cs.filter(ctx, cc, o.Where); err == nil {
		if wf.none {
			return out, nil
		}
		if !wf.all {
			f = weaviate.AllOf(headFilter, wf.f)
		}
	} else if !errors.Is(err, ErrNotSupported) { // what Weaviate cannot say is checked here only
		return nil, err
	}
	type found struct {
		id  string
		rec *store.Record
	}
	var buf []found
	keep := -1 // all
	if o.Limit > 0 {
		keep = o.Offset + o.Limit
	}
	trim := func() {
		sort.Slice(buf, func(i, j int) bool { return buf[i].id < buf[j].id })
		if keep >= 0 && len(buf) > keep {
			buf = buf[:keep]
		}
	}
	if err := cs.eachHead(ctx, cc, f, []string{propRec}, func(h weaviate.Hit) error {
		if o.After != "" && h.ID <= o.After {
			return nil
		}
		r, err := decodeRec(h.ID, h.Props[propRec])
		if err != nil {
			return err
		}
		if match(r) {
			buf = append(buf, found{h.ID, r})
			if keep >= 0 && len(buf) > 2*keep+1000 {
				trim()
			}
		}
		return ctx.Err()
	}); err != nil {
		return nil, err
	}
	trim()
	for i := o.Offset; i < len(buf); i++ {
		out = append(out, doc(buf[i].id, buf[i].rec))
	}
	return out, nil
}
