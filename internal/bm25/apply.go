package bm25

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

// minPartDocs is the smallest share of one Apply that gets its own Bleve batch: scorch
// builds each batch's segment on the calling goroutine, so a large Apply is cut into parts
// built at once on several cores; smaller parts would only make more segments to merge.
const minPartDocs = 2000

// apply indexes puts and removes deletes, then records seq. Puts are distinct ids. A large
// Apply is split into up to GOMAXPROCS batches applied concurrently (segment building is
// the larger half of indexing cost, and scorch does it on the caller's goroutine); seq is
// recorded by a last batch once all have been applied, so an interrupted Apply leaves the
// previous seq and is replayed whole.
func (b *Index) apply(puts []Doc, deletes []string, seq uint64) error {
	ana := b.bodyAnalyzer()
	if ana == nil {
		return fmt.Errorf("%w: analyzer %q not registered", ErrBM25, b.opts.Analyzer)
	}
	for _, d := range puts {
		if d.ID == "" {
			return fmt.Errorf("%w: empty document id", ErrBM25)
		}
	}
	b.prepMu.Lock()
	prepared := b.prepared
	b.prepared = nil
	b.prepMu.Unlock()
	parts := min(runtime.GOMAXPROCS(0), max(1, len(puts)/minPartDocs))
	if parts <= 1 {
		return b.applyPart(ana, puts, deletes, &seq, prepared)
	}
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(puts)/parts, (p+1)*len(puts)/parts
		var dels []string
		if p == 0 {
			dels = deletes
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer recoverCorrupt(&errs[p], "apply")
			errs[p] = b.applyPart(ana, puts[lo:hi], dels, nil, prepared)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return b.applyPart(ana, nil, nil, &seq, nil)
}

// applyPart applies one Bleve batch; seq, when not nil, is recorded in it. prepared holds
// bodies analysed ahead (Prepare), read only.
func (b *Index) applyPart(ana analysis.Analyzer, puts []Doc, deletes []string, seq *uint64, prepared map[string]preparedBody) error {
	batch := b.idx.NewBatch()
	for _, d := range puts {
		var body *bodyDocField
		if p, ok := prepared[d.ID]; ok && p.title == d.Title && p.text == d.Text {
			body = p.field
		}
		doc, err := newBM25Document(d, ana, b.bodyAna, body)
		if err != nil {
			return fmt.Errorf("%w: index %q: %w", ErrBM25, d.ID, err)
		}
		if err := batch.IndexAdvanced(doc); err != nil {
			return fmt.Errorf("%w: index %q: %v", ErrBM25, d.ID, err)
		}
	}
	for _, id := range deletes {
		batch.Delete(id)
	}
	if seq != nil {
		var sb [8]byte
		binary.BigEndian.PutUint64(sb[:], *seq)
		batch.SetInternal(seqKey, sb[:])
	}
	var persisted chan error
	if b.async() {
		// Small batches return once searchable, a bounded number of them unpersisted;
		// a large one, or one past the bound, waits for its persistence (and so for
		// every batch before it: scorch persists snapshots in order).
		ch := make(chan error, 1) // buffered: the callback never blocks the persister
		n := b.pending.Add(1)
		batch.SetPersistedCallback(func(err error) {
			b.pending.Add(-1)
			ch <- err
		})
		if len(puts)+len(deletes) >= asyncMaxDocs || n > asyncMaxPending {
			persisted = ch
		}
	}
	fail := b.persistFailed()
	if err := b.idx.Batch(batch); err != nil {
		return fmt.Errorf("%w: batch: %v", ErrBM25, err)
	}
	if persisted != nil {
		if err := b.awaitPersist(persisted, fail); err != nil {
			return fmt.Errorf("%w: persist: %v", ErrBM25, err)
		}
	}
	if seq != nil {
		b.mu.Lock()
		b.seq = *seq
		b.mu.Unlock()
	}
	return nil
}

// Bounds of AsyncPersist: an Apply batch of asyncMaxDocs documents or more waits for its
// persistence, and so does one that finds asyncMaxPending batches unpersisted.
const (
	asyncMaxDocs    = 1000
	asyncMaxPending = 256
)

// async reports whether Applies may return before they are persisted.
func (b *Index) async() bool {
	return b.opts.AsyncPersist && !b.opts.ReadOnly && !b.memOnly
}

// persistAll waits until every batch applied so far is on disk: it applies one more (the
// current sequence number again) and waits for its persistence, which scorch reaches
// only after persisting every earlier one.
func (b *Index) persistAll() error {
	batch := b.idx.NewBatch()
	var sb [8]byte
	binary.BigEndian.PutUint64(sb[:], b.Seq())
	batch.SetInternal(seqKey, sb[:])
	persisted := make(chan error, 1)
	batch.SetPersistedCallback(func(err error) { persisted <- err })
	fail := b.persistFailed()
	if err := b.idx.Batch(batch); err != nil {
		return err
	}
	return b.awaitPersist(persisted, fail)
}

// persistErrorsName is the name scorch knows persistErrors by.
const persistErrorsName = "agentmem-bm25-persist"

// persistWatch maps the scorch path of each open AsyncPersist index to the index.
var persistWatch sync.Map

func init() {
	// Registered once, before any index opens (scorch reads the registry at open).
	scorch.RegistryAsyncErrorCallbacks[persistErrorsName] = persistErrors
}

// persistErrors is scorch's async error callback of AsyncPersist indexes: a failed persist
// (a full disk) wakes the Applies waiting for theirs, which scorch would otherwise keep
// retrying without a word.
func persistErrors(err error, path string) {
	v, ok := persistWatch.Load(path)
	if !ok {
		return
	}
	if !errors.Is(err, scorch.ErrPersist) {
		return
	}
	b := v.(*Index)
	b.failMu.Lock()
	defer b.failMu.Unlock()
	b.persistErr = err
	close(b.persistFail)
	b.persistFail = make(chan struct{})
}

// persistFailed is the channel closed by the next failed persist.
func (b *Index) persistFailed() chan struct{} {
	b.failMu.Lock()
	defer b.failMu.Unlock()
	return b.persistFail
}

// awaitPersist waits for a batch's persisted callback, or for a failed persist after it
// was applied (fail: persistFailed before it).
func (b *Index) awaitPersist(persisted chan error, fail chan struct{}) error {
	select {
	case err := <-persisted:
		return err
	case <-fail:
		b.failMu.Lock()
		defer b.failMu.Unlock()
		return b.persistErr
	}
}

// preparedBody is a document's body analysed ahead of Apply, with the title and text it
// was analysed from.
type preparedBody struct {
	title, text string
	field       *bodyDocField
}

// preparePartDocs is the smallest share of a Prepare analysed on a goroutine of its own.
const preparePartDocs = 500

// Prepare analyses the bodies of docs ahead of the Apply that indexes them, on every core:
// a writer calls it while it stores the documents, so that their analysis overlaps the
// store's transaction instead of following it. Apply takes a document's analysis from
// here when its id, title and text are those prepared (analysis depends on nothing else),
// analyses the others itself, and drops what it did not take; so does a later Prepare.
// Prepare and Apply must not run at once (the writer calls one after the other).
func (b *Index) Prepare(docs []Doc) {
	if b.opts.ReadOnly || len(docs) == 0 {
		return
	}
	b.bodyAnalyzer()
	fast := b.bodyAna
	if fast == nil {
		return
	}
	fields := make([]*bodyDocField, len(docs))
	parts := min(runtime.GOMAXPROCS(0), max(1, len(docs)/preparePartDocs))
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = recover() }() // a panic leaves the rest to Apply
			for i := p * len(docs) / parts; i < (p+1)*len(docs)/parts; i++ {
				f := &bodyDocField{value: bodyText(docs[i]), ana: fast}
				f.Analyze()
				fields[i] = f
			}
		}()
	}
	wg.Wait()
	prepared := make(map[string]preparedBody, len(docs))
	for i, d := range docs {
		if fields[i] != nil {
			prepared[d.ID] = preparedBody{title: d.Title, text: d.Text, field: fields[i]}
		}
	}
	b.prepMu.Lock()
	b.prepared = prepared
	b.prepMu.Unlock()
}

// Unprepare drops what Prepare analysed (a write that failed will not apply it).
func (b *Index) Unprepare() {
	b.prepMu.Lock()
	b.prepared = nil
	b.prepMu.Unlock()
}
