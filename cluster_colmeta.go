package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/weaviate"
)

// Collection metadata on a cluster: kept in the description of the collection's class
// (classDesc.Meta), so it is created with the class (CreateCollection with
// WithCollectionMetadata: one schema change), deleted with it, and read by every client
// from the schema. SetCollectionMetadata rewrites the description (Weaviate's schema
// update, through Raft); it keeps the description's other fields as they are then.

// collectionMeta is CollectionMetadata on a cluster.
func (cs *clusterStore) collectionMeta(ctx context.Context, m *Memory, name string) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.closed.Load() {
		return nil, ErrClosed
	}
	c := m.Collection(name)
	cc, err := cs.existing(ctx, c.name)
	if err != nil {
		return nil, err
	}
	md := map[string]any{}
	if cc == nil { // the default collection before its first write
		return md, nil
	}
	ci, err := cs.wc.Class(ctx, cc.name)
	if err != nil {
		return nil, cs.classErr(err)
	}
	var d classDesc
	if err := json.Unmarshal([]byte(ci.Description), &d); err != nil {
		return nil, fmt.Errorf("%w: collection %s: its class's description: %v", ErrCorrupt, store.ShowKey(c.name), err)
	}
	for k, v := range d.Meta {
		md[k] = v
	}
	return md, nil
}

// setCollectionMeta is SetCollectionMetadata on a cluster: the default collection is
// created when it does not exist; a named one that does not is ErrCollectionNotFound.
func (cs *clusterStore) setCollectionMeta(ctx context.Context, m *Memory, name string, md map[string]any) error {
	if m.closed.Load() {
		return ErrClosed
	}
	meta, err := normalCollectionMeta(md)
	if err != nil {
		return err
	}
	if len(meta) == 0 {
		meta = nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c := m.Collection(name)
	cc, err := cs.existing(ctx, c.name)
	if err == nil && cc == nil {
		cc, _, err = cs.create(ctx, m, c.name)
	}
	if err != nil {
		return err
	}
	update := func(old string) (string, error) {
		var d classDesc
		if err := json.Unmarshal([]byte(old), &d); err != nil || d.Memory != 1 || d.Collection != c.name {
			return "", fmt.Errorf("%w: class %s is not collection %s's (its description: %q)", ErrCorrupt, cc.name, store.ShowKey(c.name), old)
		}
		d.Meta = meta
		data, err := json.Marshal(d)
		return string(data), err
	}
	// Weaviate refuses the rewrite when a writer added a property between its read and its
	// write ("property fields other than description cannot be updated"): read again.
	for try := 0; ; try++ {
		err = cs.wc.UpdateDescription(ctx, cc.name, update)
		if err == nil || try == 2 || !errors.Is(err, weaviate.ErrInvalid) || !strings.Contains(err.Error(), "property fields") {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("memory: set the metadata of collection %s: %w", store.ShowKey(c.name), cs.classErr(err))
	}
	return nil
}
