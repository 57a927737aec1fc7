package memory

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentmem/memory/vectorstore"
)

// The dense index is remembered: the manifest records the backend, the FAISS factory, the
// metric and the build parameters the store's vectors are indexed with (manifest.Index), so
// that every later open, writable or read-only, uses the same index, and a persisted one
// (FAISS) is opened rather than rebuilt. A configuration (WithIndex) that differs from the
// record is ErrIndexMismatch, or, with WithIndexRebuild, replaces it: never a silent
// switch.

// indexInfo is the dense index configuration the manifest records.
type indexInfo struct {
	Backend string         `json:"backend"`
	Factory string         `json:"factory,omitempty"`
	Metric  string         `json:"metric,omitempty"`
	Params  map[string]int `json:"params,omitempty"`
}

// searchParams are the index parameters that tune searches only (FAISS's and the disk
// index's nprobe, FAISS's efSearch, the disk index's probecut, oversample and prefilter): a
// configuration may set them to other values than the recorded ones.
var searchParams = []string{"nprobe", "efSearch", "probecut", "oversample", "prefilter"}

// String is the configuration in words, as errors name it.
func (x indexInfo) String() string {
	s := "backend " + x.Backend
	if x.Factory != "" {
		s += " factory " + x.Factory
	}
	s += " metric " + x.Metric
	if len(x.Params) > 0 {
		var ps []string
		for _, k := range slices.Sorted(maps.Keys(x.Params)) {
			ps = append(ps, fmt.Sprintf("%s=%d", k, x.Params[k]))
		}
		s += " params " + strings.Join(ps, ",")
	}
	return s
}

// normalIndex is cfg with its defaults filled in, as the manifest records it.
func normalIndex(cfg vectorstore.IndexConfig) indexInfo {
	x := indexInfo{Backend: cmpOr(cfg.Backend, vectorstore.DefaultBackend), Metric: string(cmpOr(cfg.Metric, vectorstore.Cosine))}
	if x.Backend == "faiss" {
		x.Factory = normalFactory(cfg.Factory)
	} else {
		x.Factory = strings.TrimSpace(cfg.Factory)
	}
	if len(cfg.Params) > 0 {
		x.Params = maps.Clone(cfg.Params)
	}
	return x
}

// normalFactory is a FAISS factory string as the FAISS backend names it ("" is "Flat",
// "HNSW32,Flat" is "HNSW32").
func normalFactory(f string) string {
	f = strings.TrimSpace(f)
	if f == "" {
		return "Flat"
	}
	if strings.HasPrefix(f, "HNSW") {
		f = strings.TrimSuffix(f, ",Flat")
	}
	return f
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// merge is the configuration an open asks for (cfg) over the recorded one (rec): fields
// cfg leaves zero take the recorded value, search parameters may differ; ok is false when
// a field cfg sets differs from the record.
func mergeIndex(rec indexInfo, cfg vectorstore.IndexConfig) (indexInfo, bool) {
	out := rec
	out.Params = maps.Clone(rec.Params)
	ok := true
	if cfg.Backend != "" && cfg.Backend != rec.Backend {
		ok = false
	}
	if cfg.Metric != "" && string(cfg.Metric) != rec.Metric {
		ok = false
	}
	if cfg.Factory != "" {
		f := strings.TrimSpace(cfg.Factory)
		if rec.Backend == "faiss" {
			f = normalFactory(f)
		}
		if f != rec.Factory {
			ok = false
		}
	}
	for k, v := range cfg.Params {
		if was, has := rec.Params[k]; !slices.Contains(searchParams, k) && (!has || was != v) {
			ok = false
		}
		if out.Params == nil {
			out.Params = map[string]int{}
		}
		out.Params[k] = v
	}
	return out, ok
}

// config is x as the index configuration the store opens its vector indexes with (the
// configured one's GPU and read-only settings kept).
func (x indexInfo) config(like vectorstore.IndexConfig) vectorstore.IndexConfig {
	return vectorstore.IndexConfig{Backend: x.Backend, Factory: x.Factory, Metric: vectorstore.Metric(x.Metric),
		Params: maps.Clone(x.Params), GPU: like.GPU}
}

// resolveIndex settles the dense index configuration of the store from WithIndex and the
// manifest's record (see the comment at the top of the file), records it when the store
// has vectors and none is recorded yet, and, on WithIndexRebuild with another configuration,
// drops the indexes of the old one (a writable store) so they are rebuilt.
func (op opening) resolveIndex() error {
	m := op.m
	cfg, rec := m.opts.Index, m.man.Index
	if rec == nil {
		rec = op.inferIndex()
	}
	want := normalIndex(cfg)
	if rec != nil {
		merged, ok := mergeIndex(*rec, cfg)
		switch {
		case ok:
			want = merged
		case !m.opts.RebuildIndex:
			return fmt.Errorf("%w: %s records a dense index of %s; configured %s (leave the index unset to use the recorded one, or rebuild it with WithIndexRebuild / --rebuild-index)",
				ErrIndexMismatch, m.dir, *rec, want)
		default:
			m.log.Info("memory: rebuilding the dense index with another configuration", "recorded", rec.String(), "configured", want.String())
			m.indexChanged = true
		}
	}
	if !slices.Contains(vectorstore.Backends(), want.Backend) {
		if want.Backend == vectorstore.FaissBackend {
			// A store recorded with FAISS, opened by a build without it: say how to get it.
			return fmt.Errorf("%w: %w %q (this build has %v): %w", ErrInvalidOption, vectorstore.ErrUnknownBackend, want.Backend, vectorstore.Backends(), vectorstore.ErrFaissNotBuilt)
		}
		return fmt.Errorf("%w: %w %q (this build has %v)", ErrInvalidOption, vectorstore.ErrUnknownBackend, want.Backend, vectorstore.Backends())
	}
	m.opts.Index = want.config(cfg)
	if m.man.Embedder == nil || m.opts.ReadOnly || m.tempDir {
		return nil // a store without vectors records its index when it gets an embedder
	}
	return op.recordIndex(want)
}

// recordIndex writes x into the manifest (a writable store), removing the vector indexes
// of another configuration first when the record changes.
func (op opening) recordIndex(x indexInfo) error {
	m := op.m
	if m.man.Index != nil && m.man.Index.String() == x.String() {
		return nil
	}
	if m.man.Index != nil || m.indexChanged {
		if err := os.RemoveAll(filepath.Join(m.dir, vecDir)); err != nil {
			return err
		}
	}
	man := *m.man
	man.Index = &x
	if err := writeManifest(m.dir, &man); err != nil {
		return err
	}
	m.man, m.indexChanged = &man, false
	return nil
}

// inferIndex is the configuration of a store whose manifest records none (made by an
// older version): FAISS with the factory of a collection's persisted FAISS index (its
// faiss.json), else nil (the default).
func (op opening) inferIndex() *indexInfo {
	m := op.m
	dirs, err := os.ReadDir(filepath.Join(m.dir, vecDir))
	if err != nil {
		return nil
	}
	for _, d := range dirs {
		meta, err := os.Open(filepath.Join(m.dir, vecDir, d.Name(), "faiss.json"))
		if err != nil {
			continue
		}
		x, ok := faissMetaHead(meta)
		meta.Close()
		if ok {
			return &x
		}
	}
	return nil
}

// faissMetaHead reads the factory and metric at the head of a faiss.json, without decoding
// its id table (which may hold millions of entries).
func faissMetaHead(f *os.File) (indexInfo, bool) {
	dec := json.NewDecoder(f)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return indexInfo{}, false
	}
	x := indexInfo{Backend: "faiss"}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return indexInfo{}, false
		}
		key, _ := t.(string)
		switch key {
		case "factory", "metric":
			var v string
			if err := dec.Decode(&v); err != nil {
				return indexInfo{}, false
			}
			if key == "factory" {
				x.Factory = v
			} else {
				x.Metric = v
			}
			if x.Factory != "" && x.Metric != "" {
				return x, true
			}
		case "ids", "labels":
			return indexInfo{}, false
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return indexInfo{}, false
			}
		}
	}
	return indexInfo{}, false
}

// IndexConfig is the dense index configuration the store uses: the one its manifest
// records, with what WithIndex set over it.
func (m *Memory) IndexConfig() vectorstore.IndexConfig {
	cfg := m.opts.Index
	cfg.Params = maps.Clone(cfg.Params)
	return cfg
}
