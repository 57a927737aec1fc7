package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/store"
)

// Collections carry metadata of their own (as Chroma's do): a map of string keys to string,
// number or bool values, stored with the collection in the store of record and moved with
// it by RenameCollection. A store made before collection metadata was kept reads as empty.

// Caps on a collection's metadata: more is ErrInvalidMetadata.
const (
	// MaxCollectionMetadataKeys is the most keys a collection's metadata may have.
	MaxCollectionMetadataKeys = 256
	// MaxCollectionMetadataBytes is the most bytes a collection's metadata may take, keys
	// and string values counted, 8 for each other value.
	MaxCollectionMetadataBytes = 64 << 10
)

// CollectionOption configures CreateCollection (and RenameCollection, which takes
// WithCollectionMetadata).
type CollectionOption func(*collectionConfig)

type collectionConfig struct {
	meta     map[string]any
	analyzer string // WithCollectionAnalyzer (analyzer.go)
}

// normalCollectionMeta checks collection metadata md and returns it with numbers as float64;
// ErrInvalidMetadata (or ErrInvalidUTF8) naming what is wrong.
func normalCollectionMeta(md map[string]any) (map[string]any, error) {
	if len(md) > MaxCollectionMetadataKeys {
		return nil, fmt.Errorf("%w: collection metadata has %d keys (max %d)", ErrInvalidMetadata, len(md), MaxCollectionMetadataKeys)
	}
	out := make(map[string]any, len(md))
	size := 0
	for k, v := range md {
		if k == "" {
			return nil, fmt.Errorf("%w: collection metadata has an empty key", ErrInvalidMetadata)
		}
		if !utf8.ValidString(k) {
			return nil, fmt.Errorf("%w: collection metadata key %s", ErrInvalidUTF8, store.ShowKey(k))
		}
		s, ok := docfilter.Scalar(v)
		if !ok {
			return nil, fmt.Errorf("%w: collection metadata key %s: %T is not a string, number or bool", ErrInvalidMetadata, store.ShowKey(k), v)
		}
		size += len(k) + 8
		switch x := s.(type) {
		case float64:
			if math.IsInf(x, 0) {
				return nil, fmt.Errorf("%w: collection metadata key %s is infinite", ErrInvalidMetadata, store.ShowKey(k))
			}
		case string:
			if !utf8.ValidString(x) {
				return nil, fmt.Errorf("%w: collection metadata %s", ErrInvalidUTF8, store.ShowKey(k))
			}
			size += len(x)
		}
		if size > MaxCollectionMetadataBytes {
			return nil, fmt.Errorf("%w: collection metadata of more than %d bytes", ErrInvalidMetadata, MaxCollectionMetadataBytes)
		}
		out[k] = s
	}
	return out, nil
}

// encodeCollectionMeta is the JSON collection metadata md is stored as, after checking it.
func encodeCollectionMeta(md map[string]any) ([]byte, error) {
	n, err := normalCollectionMeta(md)
	if err != nil {
		return nil, err
	}
	return json.Marshal(n)
}

// createWithMeta creates collection name with BM25 analyzer ana ("": the store's) and
// metadata JSON meta unless it exists (then nothing). The caller holds the writer lock.
func (m *Memory) createWithMeta(name, ana string, meta []byte) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if m.remote != nil {
		return m.errNotRemote("creating a collection")
	}
	m.reg.mu.Lock()
	defer m.reg.mu.Unlock()
	if m.reg.cols[name] != nil {
		return nil
	}
	exists, err := m.reg.collectionExists(name)
	if err != nil || exists {
		return err
	}
	return m.reg.createCollection(name, ana, meta)
}

// CollectionMetadata returns the metadata of collection name ("" is the default
// collection): an empty map when it has none; ErrCollectionNotFound when a named
// collection does not exist.
func (m *Memory) CollectionMetadata(ctx context.Context, name string) (map[string]any, error) {
	if cs := m.cluster; cs != nil { // cluster_colmeta.go
		return cs.collectionMeta(ctx, m, name)
	}
	c := m.Collection(name)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if m.remote != nil {
		if err := validCollectionName(c.name); err != nil {
			return nil, err
		}
		resp, err := c.remoteCall(ctx, "colmeta", "")
		if err != nil {
			return nil, err
		}
		if resp.Meta == nil {
			resp.Meta = map[string]any{}
		}
		return resp.Meta, nil
	}
	if _, err := c.existing(); err != nil {
		return nil, err
	}
	js, err := m.db.CollectionMeta(c.name)
	if errors.Is(err, ErrCollectionNotFound) && c.name == DefaultCollection {
		return map[string]any{}, nil // the default collection exists before it is written
	}
	if err != nil {
		return nil, err
	}
	md := map[string]any{}
	if js != nil {
		if err := json.Unmarshal(js, &md); err != nil {
			return nil, fmt.Errorf("%w: collection %s: its stored metadata: %v", ErrCorrupt, store.ShowKey(c.name), err)
		}
	}
	return md, nil
}

// Metadata returns the collection's metadata; see Memory.CollectionMetadata.
func (c *Collection) Metadata(ctx context.Context) (map[string]any, error) {
	return c.m.CollectionMetadata(ctx, c.name)
}

// SetCollectionMetadata replaces the metadata of collection name ("" is the default
// collection, created when it is not stored yet) with md (nil or empty: none), durably.
// ErrCollectionNotFound when a named collection does not exist; ErrInvalidMetadata when md
// is not valid (nothing changes).
func (m *Memory) SetCollectionMetadata(ctx context.Context, name string, md map[string]any) error {
	if cs := m.cluster; cs != nil { // cluster_colmeta.go
		return cs.setCollectionMeta(ctx, m, name, md)
	}
	if err := m.writable(); err != nil {
		return err
	}
	js, err := encodeCollectionMeta(md)
	if err != nil {
		return err
	}
	c, _, unlock, err := m.lockSettings(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	return m.db.SetCollectionMeta(c.name, js)
}

// lockSettings begins a change to the settings of collection name (its metadata, its
// analyzer): it checks that ctx is live, takes the writer lock, which unlock releases, and
// returns the collection and its state. The default collection is created when it is not
// stored yet; a named one that does not exist is ErrCollectionNotFound. The caller has
// checked m.writable().
func (m *Memory) lockSettings(ctx context.Context, name string) (c *Collection, s *colState, unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	c = m.Collection(name)
	m.wmu.Lock()
	if s, err = c.state(c.name == DefaultCollection); err == nil && s == nil {
		err = fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(c.name))
	}
	if err != nil {
		m.wmu.Unlock()
		return nil, nil, nil, err
	}
	return c, s, m.wmu.Unlock, nil
}

// RenameCollection gives collection from the name to, with its documents, metadata and
// indexes: searches of to answer as searches of from did, and from is then
// ErrCollectionNotFound (or, for the default collection, empty). The store of record
// changes in one transaction whose cost does not grow with the documents; the index
// directories are then renamed (a crash between the two leaves the collection under one
// name or the other, and its indexes are rebuilt on the next open). Searches running on
// from finish first.
//
// WithCollectionMetadata replaces the collection's metadata in the same transaction
// (Chroma's modify_collection with a new name and new metadata).
//
// Errors: ErrCollectionNotFound when from is not stored, ErrCollectionExists when to is,
// ErrInvalidCollection when either name is not allowed, ErrInvalidMetadata (or
// ErrInvalidUTF8) for bad metadata, ErrReadOnly on a read-only store; nothing changes on
// any of them. Renaming a collection to its own name only replaces its metadata (when given).
func (m *Memory) RenameCollection(ctx context.Context, from, to string, opts ...CollectionOption) error {
	if err := m.writable(); err != nil {
		return err
	}
	var cfg collectionConfig
	for _, o := range opts {
		o(&cfg)
	}
	var meta []byte
	if cfg.meta != nil {
		var err error
		if meta, err = encodeCollectionMeta(cfg.meta); err != nil {
			return err
		}
	}
	src, dst := m.Collection(from), m.Collection(to)
	if err := validCollectionName(src.name); err != nil {
		return err
	}
	if err := creatableCollectionName(dst.name); err != nil {
		return err
	}
	unlock, exists, err := m.reg.lockCollection(ctx, src.name, "renaming a collection")
	if err != nil {
		return err
	}
	defer unlock()
	if !exists {
		return fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(src.name))
	}
	if src.name == dst.name {
		if meta == nil {
			return nil
		}
		return m.db.SetCollectionMeta(src.name, meta)
	}
	if exists, err := m.reg.collectionExists(dst.name); err != nil || exists {
		return cmpErr(err, fmt.Errorf("%w: %s", ErrCollectionExists, store.ShowKey(dst.name)))
	}
	// Close the indexes of from (persisted up to its last change) before its directories
	// move; searches holding its read lock finish first.
	s := m.reg.cols[src.name]
	if s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := m.reg.closeIndexes(s); err != nil {
			return fmt.Errorf("memory: rename collection %s: closing its indexes: %w", store.ShowKey(src.name), err)
		}
	}
	// Any index left under the new name belongs to no collection: it must not be taken for
	// the renamed one's (removed before the store of record names it).
	if err := m.dx.removeDerived(dst.name); err != nil {
		return fmt.Errorf("memory: rename collection %s: removing stale indexes of %s: %w", store.ShowKey(src.name), store.ShowKey(dst.name), err)
	}
	// The analyzer the manifest records goes with the collection: recorded under the new
	// name before the store of record names it (a crash between the two leaves an entry no
	// collection uses, replaced when one of that name is created), and forgotten under the
	// old name after; otherwise the renamed collection's BM25 index would be rebuilt with
	// the store's default analyzer.
	ana := m.collectionAnalyzer(src.name)
	if err := m.recordAnalyzer(dst.name, ana); err != nil {
		return fmt.Errorf("memory: rename collection %s: %w", store.ShowKey(src.name), err)
	}
	if err := m.db.RenameCollection(src.name, dst.name, meta); err != nil {
		return fmt.Errorf("memory: rename collection %s to %s: %w", store.ShowKey(src.name), store.ShowKey(dst.name), err)
	}
	if err := m.recordAnalyzer(src.name, m.man.storeAnalyzer()); err != nil {
		m.log.Warn("memory: renamed collection's old analyzer entry left in the manifest", "from", src.name, "err", err)
	}
	if s != nil {
		delete(m.reg.cols, src.name)
		s.deleted = true
		s.Docs, s.Units = 0, 0
	}
	if err := m.dx.moveDerived(src.name, dst.name); err != nil {
		return fmt.Errorf("memory: collection %s renamed to %s, but moving its indexes failed (they are rebuilt on open): %w", store.ShowKey(src.name), store.ShowKey(dst.name), err)
	}
	return nil
}

// cmpErr is err when it is not nil, else other.
func cmpErr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}

// moveDerived renames the index directories of collection from to those of to (after the
// store of record renamed it). A kind kept in memory has none; a directory that cannot be
// moved is removed, and rebuilt from the store of record when the collection next opens.
func (dv derivedIndexes) moveDerived(from, to string) error {
	if !colDirFits(from) {
		return nil // it has none
	}
	var errs []error
	for _, k := range dv.kinds() {
		src, dst := dv.derivedDir(k, from), dv.derivedDir(k, to)
		if src == "" || dst == "" || !fileExists(src) {
			continue
		}
		if err := os.Rename(src, dst); err != nil {
			errs = append(errs, err, os.RemoveAll(src), os.RemoveAll(dst))
			continue
		}
		errs = append(errs, atomicfile.SyncDir(filepath.Dir(dst)))
	}
	return errors.Join(errs...)
}
