package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/store"
)

// maxFindIDs caps FindOptions.IDs.
const maxFindIDs = 100_000

// FindOptions select the documents of [Collection.Find]. The zero value selects every
// document.
type FindOptions struct {
	// IDs, when not nil, selects these documents only (unknown ids are skipped), returned
	// in this order, each once; at most 100,000.
	IDs []string
	// Where filters on metadata; WhereDocument on the title and text ($contains...).
	Where         Where
	WhereDocument WhereDocument
	// After, when set (and IDs nil), starts after this id: documents come in id order, so
	// the last id of a page is the After of the next (keyset pagination).
	After string
	// Offset skips that many matching documents; Limit (> 0) returns at most that many.
	Offset, Limit int
}

// errFindDone ends a Find scan early once Limit documents are found.
var errFindDone = errors.New("memory: find: limit reached")

// Find lists the whole documents of the collection that o selects, in id order (or in
// o.IDs' order), without their embeddings (Get has them). It reads the store of record:
// without IDs it scans the collection's records from o.After until Limit matches are
// found, but for a Where on metadata, whose documents the keyword index lists (each then
// read from the store of record and checked against the filter). A named collection that does not exist is ErrCollectionNotFound; a bad filter
// ErrInvalidFilter (ErrFilterTooLarge over its caps); too many IDs ErrInvalidOption.
func (c *Collection) Find(ctx context.Context, o FindOptions) ([]Document, error) {
	if o.Offset < 0 || o.Limit < 0 {
		return nil, fmt.Errorf("%w: Find offset %d, limit %d: want >= 0", ErrInvalidOption, o.Offset, o.Limit)
	}
	if len(o.IDs) > maxFindIDs {
		return nil, fmt.Errorf("%w: Find with %d ids, the cap is %d (the id cap)", ErrInvalidOption, len(o.IDs), maxFindIDs)
	}
	cw, err := docfilter.Compile(o.Where)
	if err != nil {
		return nil, err
	}
	where := cw.Pred
	whereDoc, err := docfilter.CompileDocument(o.WhereDocument)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cs := c.m.cluster; cs != nil { // cluster_find.go
		return cs.find(ctx, c.m, c.name, o, where, whereDoc)
	}
	s, err := c.existing()
	if err != nil || s == nil {
		return []Document{}, err
	}
	out := []Document{}
	skip := o.Offset
	keep := func(id string, r *store.Record) error {
		if (where != nil && !where(r)) || (whereDoc != nil && !whereDoc(r)) {
			return nil
		}
		if skip > 0 {
			skip--
			return nil
		}
		out = append(out, Document{ID: id, Title: r.Title, Text: r.Text, Metadata: r.Metadata, Source: recordSource(r)})
		if o.Limit > 0 && len(out) >= o.Limit {
			return errFindDone
		}
		return ctx.Err()
	}
	// For a Where on metadata, the documents the index that evaluates filters lists
	// (sorted; each checked against its record in the read below): a Find by source reads
	// those documents, not every record of the collection, and a page only its own
	// (from o.After until Limit matches: a Find paged through a million matches read
	// every match's record for each page).
	var units []string
	indexed := false
	if o.IDs == nil && cw.Meta != nil {
		if units, indexed, err = c.filterUnits(ctx, s, cw); err != nil {
			return nil, err
		}
	}
	err = c.m.db.View(func(tx *store.Tx) error {
		read := func(id string) error {
			r, err := tx.Record(c.name, id)
			if err != nil || r == nil {
				return err
			}
			return keep(id, r)
		}
		switch {
		case indexed:
			return eachUnitDoc(ctx, units, o.After, read)
		case o.IDs == nil:
			return tx.EachRecordAfter(c.name, o.After, false, keep)
		}
		seen := make(map[string]bool, len(o.IDs))
		for _, id := range o.IDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			if err := read(id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFindDone) {
		return nil, err
	}
	return out, nil
}
