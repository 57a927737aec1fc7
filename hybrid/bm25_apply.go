package hybrid

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
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
func (b *BM25Index) apply(puts []BM25Doc, deletes []string, seq uint64) error {
	ana := b.bodyAnalyzer()
	if ana == nil {
		return fmt.Errorf("%w: analyzer %q not registered", ErrBM25, en.AnalyzerName)
	}
	for _, d := range puts {
		if d.ID == "" {
			return fmt.Errorf("%w: empty document id", ErrBM25)
		}
	}
	parts := min(runtime.GOMAXPROCS(0), max(1, len(puts)/minPartDocs))
	if parts <= 1 {
		return b.applyPart(ana, puts, deletes, &seq)
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
			errs[p] = b.applyPart(ana, puts[lo:hi], dels, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return b.applyPart(ana, nil, nil, &seq)
}

// applyPart applies one Bleve batch; seq, when not nil, is recorded in it.
func (b *BM25Index) applyPart(ana analysis.Analyzer, puts []BM25Doc, deletes []string, seq *uint64) error {
	batch := b.idx.NewBatch()
	for _, d := range puts {
		doc, err := newBM25Document(d, ana, b.bodyAna)
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
	if err := b.idx.Batch(batch); err != nil {
		return fmt.Errorf("%w: batch: %v", ErrBM25, err)
	}
	if seq != nil {
		b.mu.Lock()
		b.seq = *seq
		b.mu.Unlock()
	}
	return nil
}
