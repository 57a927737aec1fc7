package memory

import (
	"context"
	"fmt"
	"maps"

	"github.com/agentmem/memory/internal/bm25"
)

// A collection's BM25 analyzer (how its bodies and queries become terms: English by
// default, or another of Bleve's analyzers, [Analyzers]) is a setting chosen when the
// collection is created and recorded in the manifest: manifest.Analyzer is the store's
// default (WithAnalyzer when the store was created; English for older stores) and
// manifest.Analyzers the collections created with another. The BM25 index records its
// analyzer too, so an index built with another than the manifest's (SetCollectionAnalyzer,
// a crash between the two) is rebuilt from the store of record when opened.

// Analyzers lists the BM25 analyzer names this build knows ("en", the default, "cjk",
// Bleve's European and other language analyzers, "standard", "simple", "keyword"), sorted.
func Analyzers() []string { return bm25.Analyzers() }

// storeAnalyzer is the store's default analyzer as the manifest records it.
func (man *manifest) storeAnalyzer() string {
	if man.Analyzer == "" {
		return bm25.DefaultAnalyzer
	}
	return man.Analyzer
}

// checkAnalyzer validates Options.Analyzer against the manifest: a store without documents
// records it as its default, one with documents must record the same (or the option is
// left empty).
func (op opening) checkAnalyzer() error {
	m := op.m
	if m.opts.Analyzer == "" {
		m.opts.Analyzer = m.man.storeAnalyzer()
		return nil
	}
	name, err := bm25.CheckAnalyzer(m.opts.Analyzer)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	m.opts.Analyzer = name
	if rec := m.man.storeAnalyzer(); rec != name {
		n, err := m.countDocs()
		if err != nil {
			return err
		}
		if n > 0 || m.opts.ReadOnly {
			return fmt.Errorf("%w: the store's analyzer is %q, opened with %q (SetCollectionAnalyzer changes a collection's)", ErrAnalyzerMismatch, rec, name)
		}
		m.anaMu.Lock()
		defer m.anaMu.Unlock()
		man := *m.man
		man.Analyzer = name
		if name == bm25.DefaultAnalyzer {
			man.Analyzer = ""
		}
		if err := writeManifest(m.dir, &man); err != nil {
			return err
		}
		m.man = &man
	}
	return nil
}

// collectionAnalyzer is the analyzer the manifest records for collection name.
func (m *Memory) collectionAnalyzer(name string) string {
	m.anaMu.Lock()
	defer m.anaMu.Unlock()
	if a, ok := m.man.Analyzers[name]; ok {
		return a
	}
	return m.man.storeAnalyzer()
}

// recordAnalyzer records ana as collection name's analyzer in the manifest (removing the
// entry when it is the store's default). A read-only store records it in memory only.
func (m *Memory) recordAnalyzer(name, ana string) error {
	m.anaMu.Lock()
	defer m.anaMu.Unlock()
	cur, ok := m.man.Analyzers[name]
	def := m.man.storeAnalyzer()
	if (ok && cur == ana) || (!ok && ana == def) {
		return nil
	}
	man := *m.man
	man.Analyzers = maps.Clone(m.man.Analyzers)
	if ana == def {
		delete(man.Analyzers, name)
	} else {
		if man.Analyzers == nil {
			man.Analyzers = map[string]string{}
		}
		man.Analyzers[name] = ana
	}
	if len(man.Analyzers) == 0 {
		man.Analyzers = nil
	}
	if !m.opts.ReadOnly {
		if err := writeManifest(m.dir, &man); err != nil {
			return fmt.Errorf("memory: recording the analyzer of collection %q: %w", name, err)
		}
	}
	// Only this field changes: searches read m.man's others without a lock.
	m.man.Analyzers = man.Analyzers
	return nil
}

// Analyzer is the collection's BM25 analyzer, as the manifest records it ("en" unless the
// collection was created with another).
func (c *Collection) Analyzer() string {
	if c.m.cluster != nil {
		return ClusterAnalyzer
	}
	return c.m.collectionAnalyzer(c.name)
}

// ClusterAnalyzer is what [Collection.Analyzer] reports on a store on a Weaviate cluster:
// BM25 runs in Weaviate, on its "word" tokenization (lower-cased alphanumeric words, no
// stemming) with its default English stop words, not on one of this package's analyzers.
const ClusterAnalyzer = "weaviate:word"

// SetCollectionAnalyzer changes the BM25 analyzer of an existing collection and rebuilds
// its BM25 index from the store of record with it (searches wait meanwhile). An unknown
// name is ErrUnknownAnalyzer; a collection that does not exist ErrCollectionNotFound.
func (m *Memory) SetCollectionAnalyzer(ctx context.Context, name, analyzer string) error {
	if err := m.writable(); err != nil {
		return err
	}
	ana, err := bm25.CheckAnalyzer(analyzer)
	if err != nil {
		return err
	}
	c, s, unlock, err := m.lockSettings(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.analyzer == ana {
		return nil
	}
	if err := m.reg.closeIndexes(s); err != nil {
		return err
	}
	if err := m.recordAnalyzer(c.name, ana); err != nil {
		return err
	}
	s.analyzer = ana
	// The BM25 index records the old analyzer: opening it rebuilds it with the new one.
	return m.reg.openIndexes(s)
}
