package postfile

import (
	"bytes"
	"fmt"
	"io"
	"slices"

	"github.com/agentmem/memory/internal/postings"
)

// closeCheckTerms and closeCheckBlocks are how often Merge looks at its
// close channel: every so many terms, and every so many blocks of a term.
const (
	closeCheckTerms  = 1024
	closeCheckBlocks = 4096
)

// Merge writes to w the file of the documents of inputs renumbered by
// newDocNums: newDocNums[i][d] is the new number of document d of
// inputs[i], or Dropped. The new numbers must be dense, 0..M-1, and
// strictly increasing within each input and across the inputs in order
// (input 0's survivors first), and len(newDocNums[i]) must be
// inputs[i].NumDocs(); otherwise Merge writes nothing and returns an error
// wrapping ErrInput, as it does when no document or no posting survives.
// A term whose postings are all dropped is left out. The lengths come from
// the inputs.
//
// Merge streams: it walks the inputs' dictionaries together (a k-way merge
// on a heap), decodes each term's postings block by block, and writes the
// term before reading the next; it holds one term's surviving postings and
// the new dictionary in memory. w is buffered as by NewWriter.
//
// If closeCh (which may be nil) is closed, Merge stops within a few
// thousand terms or blocks and returns ErrClosed. Damage found in an input
// gives an error wrapping ErrCorrupt. Merge does not verify the inputs'
// checksums (see Reader.Verify). After an error, what was written to w is
// not a valid file.
func Merge(w io.Writer, inputs []*Reader, newDocNums [][]uint64, closeCh <-chan struct{}) error {
	if len(inputs) != len(newDocNums) {
		return badInput("merge: %d inputs, %d renumberings", len(inputs), len(newDocNums))
	}
	var m uint64 // survivors so far: the next new number
	var maxLen uint32
	for i, r := range inputs {
		if r == nil {
			return badInput("merge: input %d is nil", i)
		}
		ndn := newDocNums[i]
		if len(ndn) != r.NumDocs() {
			return badInput("merge: input %d: %d new numbers for %d documents", i, len(ndn), r.NumDocs())
		}
		for d, v := range ndn {
			if v == Dropped {
				continue
			}
			if v != m {
				return badInput("merge: input %d: doc %d: new number %d, want %d", i, d, v, m)
			}
			m++
			maxLen = max(maxLen, r.Length(uint32(d)))
		}
	}
	if closed(closeCh) {
		return ErrClosed
	}
	var o Options
	for i, r := range inputs {
		if i == 0 {
			o.FixedSpan = uint16(r.fixed)
		} else if uint64(o.FixedSpan) != r.fixed {
			return badInput("merge: input %d has fixed span %d, input 0 %d", i, r.fixed, o.FixedSpan)
		}
	}
	wr := newWriter(w, m, o)
	if wr.err != nil {
		return wr.err
	}
	le := wr.lengthsWriter(widthFor(maxLen))
	for i, r := range inputs {
		for d, v := range newDocNums[i] {
			if v != Dropped {
				le.put(r.Length(uint32(d)))
			}
		}
	}
	le.flush()
	if wr.err != nil {
		return wr.err
	}
	mg := merger{wr: wr, closeCh: closeCh, ins: make([]mergeInput, len(inputs))}
	for i, r := range inputs {
		in := &mg.ins[i]
		in.r, in.ndn, in.it = r, newDocNums[i], r.Iterator(nil, nil)
		if err := mg.advance(i); err != nil {
			return err
		}
	}
	run := mg.run
	if m >= pipelineMinDocs {
		run = mg.runPipelined
	}
	if err := run(); err != nil {
		return err
	}
	return wr.Close()
}

// pipelineMinDocs is the least documents a merge writes for it to run in two goroutines
// (runPipelined): a smaller one is over before the second would pay for itself. (A
// variable for tests.)
var pipelineMinDocs uint64 = 1 << 18

// closed reports whether ch is closed (never, for a nil ch).
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// mergeInput is one input of a merge and its place in its dictionary.
type mergeInput struct {
	r   *Reader
	ndn []uint64
	it  *TermIterator
	t   Term
}

// merger merges the inputs' terms through the Writer wr.
type merger struct {
	wr      *Writer
	closeCh <-chan struct{}
	ins     []mergeInput
	heap    []int // inputs with terms left, by (current term, input index)
	group   []int
	term    []byte
	docs    []uint32
	freqs   []uint32
	lens    []uint32
	list    postings.List
	dbuf    [postings.BlockSize]uint32
	fbuf    [postings.BlockSize]uint32
	blocks  int // blocks decoded since the last look at closeCh
}

// advance moves input i to its next term and, if it has one, onto the
// heap.
func (mg *merger) advance(i int) error {
	in := &mg.ins[i]
	if _, ok, err := in.it.Next(nil); err != nil {
		return fmt.Errorf("merge: input %d: %w", i, err)
	} else if ok {
		mg.push(i)
	}
	return nil
}

// run merges every term.
func (mg *merger) run() error {
	terms := 0
	for len(mg.heap) > 0 {
		mg.docs, mg.freqs, mg.lens = mg.docs[:0], mg.freqs[:0], mg.lens[:0]
		if err := mg.nextTerm(); err != nil {
			return err
		}
		if len(mg.docs) > 0 {
			if err := mg.wr.add(mg.term, mg.docs, mg.freqs, mg.lens); err != nil {
				return err
			}
		}
		if terms++; terms%closeCheckTerms == 0 && closed(mg.closeCh) {
			return ErrClosed
		}
	}
	return nil
}

// A merge's work splits in two about evenly: walking the inputs' dictionaries and
// decoding their postings, and encoding the merged postings and building the new
// dictionary. A large merge (pipelineMinDocs: above all the compaction of a bulk
// load into one segment, which runs alone) does the first in the caller's goroutine and the
// second in another, passing terms in batches; two batches take turns, so it holds at most
// twice the postings of its largest term. The file written is the same byte for byte
// (TestMergeIdentical runs both ways).

// mergeBatch is a run of merged terms and their postings, in order.
type mergeBatch struct {
	terms             []byte     // the terms, one after another
	ends              []mergeEnd // per term: where its bytes and its postings end
	docs, freqs, lens []uint32
}

// mergeEnd locates a term of a mergeBatch: its bytes end at term, its postings at post.
type mergeEnd struct{ term, post int }

// A batch is handed to the writing goroutine once it holds batchPostings postings or
// batchTerms terms.
const (
	batchPostings = 1 << 18
	batchTerms    = 1 << 12
)

// runPipelined merges every term as run does, the writing in a goroutine of its own.
func (mg *merger) runPipelined() error {
	const batches = 2
	free := make(chan *mergeBatch, batches)
	for range batches {
		free <- new(mergeBatch)
	}
	full := make(chan *mergeBatch, batches)
	failed := make(chan struct{}) // closed at the writer's first error
	done := make(chan struct{})
	var werr error // the writer's error: read once done is closed
	go func() {
		defer close(done)
		for b := range full {
			if werr == nil {
				if werr = mg.writeSafely(b); werr != nil {
					close(failed)
				}
			}
			free <- b // (room for every batch: never blocks)
		}
	}()
	err := mg.fill(free, full, failed)
	close(full)
	<-done
	if err != nil {
		return err
	}
	return werr
}

// fill merges the terms into batches from free and sends each to full, until the terms
// run out or failed is closed (the writer's error is then the merge's).
func (mg *merger) fill(free <-chan *mergeBatch, full chan<- *mergeBatch, failed <-chan struct{}) error {
	take := func() *mergeBatch {
		select {
		case b := <-free:
			b.terms, b.ends = b.terms[:0], b.ends[:0]
			b.docs, b.freqs, b.lens = b.docs[:0], b.freqs[:0], b.lens[:0]
			return b
		case <-failed:
			return nil
		}
	}
	send := func(b *mergeBatch) bool {
		select {
		case full <- b:
			return true
		case <-failed:
			return false
		}
	}
	b := take()
	if b == nil {
		return nil
	}
	terms := 0
	for len(mg.heap) > 0 {
		mg.docs, mg.freqs, mg.lens = b.docs, b.freqs, b.lens
		start := len(mg.docs)
		if err := mg.nextTerm(); err != nil {
			return err
		}
		b.docs, b.freqs, b.lens = mg.docs, mg.freqs, mg.lens
		mg.docs, mg.freqs, mg.lens = nil, nil, nil
		if len(b.docs) > start {
			b.terms = append(b.terms, mg.term...)
			b.ends = append(b.ends, mergeEnd{term: len(b.terms), post: len(b.docs)})
		}
		if len(b.docs) >= batchPostings || len(b.ends) >= batchTerms {
			if !send(b) {
				return nil
			}
			if b = take(); b == nil {
				return nil
			}
		}
		if terms++; terms%closeCheckTerms == 0 && closed(mg.closeCh) {
			return ErrClosed
		}
	}
	if len(b.ends) > 0 {
		send(b)
	}
	return nil
}

// writeSafely is writeBatch reporting a panic as an error: the writing goroutine's panic
// would end the process, where Merge's caller expects an error.
func (mg *merger) writeSafely(b *mergeBatch) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("postfile: merge: writing: %v", p)
		}
	}()
	return mg.writeBatch(b)
}

// writeBatch writes the terms of b.
func (mg *merger) writeBatch(b *mergeBatch) error {
	t, p := 0, 0
	for _, e := range b.ends {
		if err := mg.wr.add(b.terms[t:e.term], b.docs[p:e.post], b.freqs[p:e.post], b.lens[p:e.post]); err != nil {
			return err
		}
		t, p = e.term, e.post
	}
	return nil
}

// nextTerm takes the smallest term of the inputs (mg.term) and appends its surviving
// postings from every input that has it to mg.docs, freqs and lens, moving those inputs on.
func (mg *merger) nextTerm() error {
	mg.term = append(mg.term[:0], mg.ins[mg.heap[0]].it.key...)
	mg.group = mg.group[:0]
	for len(mg.heap) > 0 && bytes.Equal(mg.ins[mg.heap[0]].it.key, mg.term) {
		mg.group = append(mg.group, mg.pop()) // equal terms pop in input order
	}
	for _, i := range mg.group {
		if err := mg.collect(i); err != nil {
			if err == ErrClosed {
				return err
			}
			return fmt.Errorf("merge: input %d: term %q: %w", i, mg.term, err)
		}
		if err := mg.advance(i); err != nil {
			return err
		}
	}
	return nil
}

// collect appends the surviving postings of input i's current term, with
// new document numbers and their lengths, to mg.docs, freqs and lens.
func (mg *merger) collect(i int) error {
	in := &mg.ins[i]
	t := &in.t
	if err := in.r.load(in.it.val, t); err != nil {
		return err
	}
	l := &mg.list
	for c := range t.Chunks() {
		if err := t.Chunk(c, l); err != nil {
			return err
		}
		lo := uint64(c) * t.span
		for b := range l.Blocks() {
			n, err := l.DecodeBlock(b, mg.dbuf[:], mg.fbuf[:])
			if err != nil {
				return corruptWrap(err, "chunk %d", c)
			}
			if b == 0 && uint64(mg.dbuf[0]) < lo {
				return corrupt("chunk %d: first document %d below %d", c, mg.dbuf[0], lo)
			}
			// Chunk checked the documents are below N, len(in.ndn). Every
			// posting is written at j, which moves on past survivors only
			// (no branch to mispredict on random drops).
			j := len(mg.docs)
			docs, freqs, lens := grow(mg.docs, n), grow(mg.freqs, n), grow(mg.lens, n)
			docs, freqs, lens = docs[:j+n], freqs[:j+n], lens[:j+n]
			for k, d := range mg.dbuf[:n] {
				nd := in.ndn[d]
				docs[j], freqs[j], lens[j] = uint32(nd), mg.fbuf[k], in.r.Length(d)
				if nd != Dropped {
					j++
				}
			}
			mg.docs, mg.freqs, mg.lens = docs[:j], freqs[:j], lens[:j]
			if mg.blocks++; mg.blocks == closeCheckBlocks {
				mg.blocks = 0
				if closed(mg.closeCh) {
					return ErrClosed
				}
			}
		}
	}
	return nil
}

// less orders inputs a and b by their current terms, then by index.
func (mg *merger) less(a, b int) bool {
	c := bytes.Compare(mg.ins[a].it.key, mg.ins[b].it.key)
	return c < 0 || c == 0 && a < b
}

func (mg *merger) push(i int) {
	h := append(mg.heap, i)
	for k := len(h) - 1; k > 0; {
		p := (k - 1) / 2
		if !mg.less(h[k], h[p]) {
			break
		}
		h[k], h[p] = h[p], h[k]
		k = p
	}
	mg.heap = h
}

func (mg *merger) pop() int {
	h := mg.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for k := 0; ; {
		c := 2*k + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && mg.less(h[c+1], h[c]) {
			c++
		}
		if !mg.less(h[c], h[k]) {
			break
		}
		h[k], h[c] = h[c], h[k]
		k = c
	}
	mg.heap = h
	return top
}

// grow returns s with room for n more values.
func grow(s []uint32, n int) []uint32 {
	if cap(s)-len(s) >= n {
		return s
	}
	return slices.Grow(s, n)
}
