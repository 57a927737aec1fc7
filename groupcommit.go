package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/agentmem/memory/internal/store"
)

// Group commit: Adds and Upserts that wait for the writer lock at the same time share one
// transaction of the store of record, so one fsync acknowledges all of them. A writer
// queues its prepared write (validated, chunked and embedded outside the lock) and takes
// the writer lock; the first to get it commits everything queued by then, in order, and
// the others find their write done when the lock reaches them. Each write keeps its own
// outcome: a write whose checks fail (a duplicate id, a cancelled context) fails alone
// and the rest are committed; a failed transaction fails every write in it, and none of
// them is stored (the transaction is atomic). A write returns only after the transaction
// that holds it is durable, so an acknowledged write survives a kill at any instant.

// pendingWrite is one Add or Upsert waiting in the group commit queue.
type pendingWrite struct {
	ctx    context.Context
	c      *Collection
	w      *docWrite
	upsert bool
	done   bool          // committed or failed (set under groupQueue.mu)
	err    error         // its outcome
	wake   chan struct{} // a send wakes it: done, or first in the queue (it leads)
}

// groupQueue is the writes waiting for the writer lock.
type groupQueue struct {
	mu      sync.Mutex
	pending []*pendingWrite

	commits, writes int // transactions and the writes they held (under the writer lock; for tests)
}

// maxGroupUnits caps the index ids one group transaction writes; the writes past it wait
// for the next one (a single larger write is committed alone).
const maxGroupUnits = 20_000

// groupCommitHook, set by tests, runs in the committing writer after it takes the
// writer lock and before it takes the queue.
var groupCommitHook func(m *Memory)

// groupWrite commits w (an Add, or an Upsert when upsert is set) to collection c with
// whatever other writes are queued, and returns once the transaction that holds it is
// durable and its indexes are updated.
//
// The queue's first write leads: it takes the writer lock, commits every write queued by
// then (in groups, commitGroup), removes them from the queue, wakes each, and hands the
// lead to the write now first, if any. The others sleep on their own channel until they
// are done or lead, instead of taking the writer lock in turn only to find their write
// done: with 8 writers that lock's hand-offs, one wake-up after another, were most of a
// write's wait, and the next transaction held few writes.
func (m *Memory) groupWrite(ctx context.Context, c *Collection, w *docWrite, upsert bool) error {
	pw := &pendingWrite{ctx: ctx, c: c, w: w, upsert: upsert, wake: make(chan struct{}, 1)}
	q := &m.gq
	q.mu.Lock()
	q.pending = append(q.pending, pw)
	lead := len(q.pending) == 1
	q.mu.Unlock()
	if !lead {
		<-pw.wake // done, or first in the queue
		q.mu.Lock()
		done := pw.done
		q.mu.Unlock()
		if done {
			return pw.err
		}
	}
	m.leadGroup()
	return pw.err
}

// leadGroup commits the writes queued (the caller's first among them) and hands the lead
// on. Whatever happens, each write it took is marked done and woken, with
// ErrIndexUpdate if the commit did not finish (a panic, re-raised after; one before it
// took the queue fails the caller's write alone), and the write now first leads.
func (m *Memory) leadGroup() {
	q := &m.gq
	var batch []*pendingWrite
	finished := false
	defer func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if batch == nil { // failed before it took the queue: its own write only
			batch = q.pending[:1]
		}
		for _, p := range batch {
			if !finished && !p.done {
				p.err = fmt.Errorf("%w: the group commit holding this write failed", ErrIndexUpdate)
			}
			p.done = true
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
		q.pending = q.pending[len(batch):]
		if len(q.pending) == 0 {
			q.pending = nil
		} else {
			select {
			case q.pending[0].wake <- struct{}{}: // the next leader
			default:
			}
		}
	}()
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if groupCommitHook != nil {
		groupCommitHook(m)
	}
	q.mu.Lock()
	batch = q.pending[:len(q.pending):len(q.pending)]
	q.mu.Unlock()
	for rest := batch; len(rest) > 0; {
		n := groupSize(rest)
		m.commitGroup(rest[:n])
		q.mu.Lock()
		for _, p := range rest[:n] {
			p.done = true
		}
		q.mu.Unlock()
		rest = rest[n:]
	}
	finished = true
}

// queued is how many writes wait in the group commit queue (for tests).
func (m *Memory) queued() int {
	m.gq.mu.Lock()
	defer m.gq.mu.Unlock()
	return len(m.gq.pending)
}

// groupSize is how many of the writes at the head of batch go into one transaction: those
// of the first one's collection, up to the first that shares a document id with an
// earlier one (it must see their versions as stored) and within maxGroupUnits.
func groupSize(batch []*pendingWrite) int {
	ids := map[string]bool{}
	units := 0
	for i, p := range batch {
		if i > 0 && (p.c.name != batch[0].c.name || units+p.w.nUnits > maxGroupUnits) {
			return i
		}
		for _, d := range p.w.docs {
			if ids[d.ID] {
				return i
			}
		}
		for _, d := range p.w.docs {
			ids[d.ID] = true
		}
		units += p.w.nUnits
	}
	return len(batch)
}

// commitGroup writes the writes of one collection with distinct ids in one transaction
// and updates the indexes; it sets each write's err (called under the writer lock).
func (m *Memory) commitGroup(group []*pendingWrite) {
	fail := func(ps []*pendingWrite, err error) {
		for _, p := range ps {
			p.err = err
		}
	}
	if m.closed.Load() {
		fail(group, ErrClosed)
		return
	}
	c := group[0].c
	s, err := c.state(true)
	if err == nil && s == nil {
		err = fmt.Errorf("%w: %s", ErrCollectionNotFound, store.ShowKey(c.name))
	}
	if err != nil {
		fail(group, err)
		return
	}
	if err := m.reg.ensureOpen(s); err != nil {
		fail(group, err)
		return
	}
	prepared := func(bool) {}
	if len(group) == 1 { // a lone write's BM25 analysis overlaps its transaction
		prepared = group[0].w.prepareBM25(s)
	}
	defer prepared(false)
	// Read under the writer lock, so the stored versions cannot change before the write;
	// a write that fails here fails alone.
	live := make([]*pendingWrite, 0, len(group))
	var puts []store.Put
	added, delta := 0, 0
	for _, p := range group {
		if err := p.ctx.Err(); err != nil {
			p.err = err
			continue
		}
		if err := p.w.readStored(m, c.name, p.upsert); err != nil {
			p.err = err
			continue
		}
		live = append(live, p)
		puts = append(puts, p.w.puts()...)
		added += p.w.added
		delta += p.w.nUnits - p.w.oldUnits
	}
	if len(live) == 0 {
		return
	}
	commit, err := m.db.Write(c.name, puts, added, delta)
	m.gq.commits++
	m.gq.writes += len(live)
	if err != nil {
		fail(live, fmt.Errorf("memory: write: %w", err))
		return
	}
	prepared(true)
	for _, p := range live {
		p.w.commit = commit
	}

	// The writes are durable; now the in-memory view and the indexes.
	unlock, err := m.reg.lockOpen(s)
	if err != nil {
		fail(live, fmt.Errorf("%w: their collection's indexes cannot be opened: %w", ErrIndexUpdate, err))
		return
	}
	defer unlock()
	s.Committed(commit)
	if commit.Changes == 0 {
		return
	}
	if err := errors.Join(m.db.Apply(context.WithoutCancel(live[0].ctx), &s.Collection, commit), m.db.MaybeTrim(&s.Collection)); err != nil {
		fail(live, fmt.Errorf("%w: %w", ErrIndexUpdate, err))
	}
}
