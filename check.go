package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/vectorstore"
)

// checkSample is how many stored ids Check looks up in each index that can tell.
const checkSample = 100

// CheckReport is what [Memory.Check] found: one entry per collection and derived index.
type CheckReport struct {
	Indexes []IndexCheck
}

// OK reports whether every index agrees with the store of record (or was repaired).
func (r CheckReport) OK() bool {
	for _, ix := range r.Indexes {
		if len(ix.Problems) > 0 && !ix.Repaired {
			return false
		}
	}
	return true
}

// StoreDamaged reports whether the store of record itself is damaged (an entry with
// StoreDamage): what it names cannot be repaired from anything else.
func (r CheckReport) StoreDamaged() bool {
	for _, ix := range r.Indexes {
		if ix.StoreDamage && len(ix.Problems) > 0 && !ix.Repaired {
			return true
		}
	}
	return false
}

// Repairable reports whether an entry disagrees that a repair (Check with repair: derived
// indexes rebuilt, counters counted again) can fix.
func (r CheckReport) Repairable() bool {
	for _, ix := range r.Indexes {
		if !ix.StoreDamage && len(ix.Problems) > 0 && !ix.Repaired {
			return true
		}
	}
	return false
}

// DamagedKeys lists the keys (document ids, index ids) of damaged records and vectors that
// the store entries name (at most 10 per collection).
func (r CheckReport) DamagedKeys() []string {
	var keys []string
	for _, ix := range r.Indexes {
		keys = append(keys, ix.DamagedKeys...)
	}
	return keys
}

// IndexCheck is the check of one derived index of one collection against the store of
// record.
type IndexCheck struct {
	Collection string
	// Index is the kind of index: "bm25" or "vectors"; "store" is the collection's records
	// in the store of record themselves (each decoded, counted, its vectors sized),
	// "counters" its document and index id counters (held to a count of its records), and
	// "store.db" (collection "*") the check of the whole file's pages (each branch and leaf
	// page reachable from the root read and checked, each reached once, the freelist
	// listing the others) and of its layout. Damage to
	// "store" and "store.db" cannot be repaired (there is nothing to rebuild them from);
	// counters are counted again by a repair.
	Index string
	// StoreUnits is how many index ids (documents, or chunks of chunked ones) the store of
	// record holds for this index (for vectors: how many vectors it stores), and StoreSeq the
	// sequence number of the collection's last change.
	StoreUnits int
	StoreSeq   uint64
	// Count is how many ids the index holds and Seq the change it reflects (0 for an index
	// that does not persist itself: it is loaded from the store of record when opened).
	Count int
	Seq   uint64
	// Sampled is how many stored ids were looked up in the index and Missing those it
	// lacked (at most 10 are listed). SampleSkipped says why no sample was taken.
	Sampled       int
	Missing       []string
	SampleSkipped string
	// Notes say what was found that is not a disagreement (an index behind the store that
	// opening catches up from the change log).
	Notes []string
	// Problems say what disagreed with the store of record; empty when the index agrees.
	// After a repair the figures above are the rebuilt index's.
	Problems []string
	// Repaired: the index was rebuilt from the store of record and then agreed with it
	// (counters: counted again and persisted).
	Repaired bool
	// StoreDamage: the problems are damage to the store of record itself, which a repair
	// cannot fix (restore store.db from a backup). DamagedKeys names the damaged records
	// and vectors (document ids, index ids), at most 10.
	StoreDamage bool
	DamagedKeys []string
}

// String is the index's line of a report: "collection/index: ok|...".
func (c IndexCheck) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s: ", c.Collection, c.Index)
	switch {
	case len(c.Problems) == 0:
		b.WriteString("ok")
	case c.Repaired:
		b.WriteString("REPAIRED")
	default:
		b.WriteString("DISAGREES")
	}
	switch c.Index {
	case dbName:
		b.WriteString(" (every page and the freelist checked)")
		c.writeFindings(&b)
		return b.String()
	case "store":
		fmt.Fprintf(&b, " (every record read: %d index ids)", c.StoreUnits)
		c.writeFindings(&b)
		return b.String()
	case countersEntry:
		fmt.Fprintf(&b, " (%d documents, %d index ids)", c.Count, c.StoreUnits)
		c.writeFindings(&b)
		return b.String()
	case indexesEntry:
		c.writeFindings(&b)
		return b.String()
	}
	fmt.Fprintf(&b, " (store: %d ids, change %d; index: %d ids", c.StoreUnits, c.StoreSeq, c.Count)
	if c.Seq != 0 {
		fmt.Fprintf(&b, ", change %d", c.Seq)
	}
	if c.SampleSkipped != "" {
		fmt.Fprintf(&b, "; sample skipped: %s", c.SampleSkipped)
	} else {
		fmt.Fprintf(&b, "; %d/%d sampled ids found", c.Sampled-len(c.Missing), c.Sampled)
	}
	b.WriteString(")")
	c.writeFindings(&b)
	return b.String()
}

// writeFindings appends the notes and problems of c to a report line.
func (c IndexCheck) writeFindings(b *strings.Builder) {
	for _, n := range c.Notes {
		b.WriteString("; " + n)
	}
	for _, p := range c.Problems {
		b.WriteString("; " + p)
	}
}

// Check verifies every derived index of every collection against the store of record: the
// index's sequence number against the collection's last change, its number of ids against
// the stored units (vectors: the stored vectors), and whether a deterministic sample of
// stored ids (up to 100, spread over the collection) is in it (for an index that can look
// ids up: BM25; the vector indexes cannot, which the report says). An index on disk is
// first checked as it is, before opening catches it up or rebuilds it.
//
// With repair, an index that disagrees is rebuilt from the store of record (on disk) and
// checked again. Without it nothing is rebuilt on purpose, but opening a collection's
// indexes on a writable store already rebuilds one that fails the open-time checks (the
// report marks it repaired); open the store with ReadOnly to look without changing
// anything (a read-only store rebuilds in memory only). Repair on a read-only store is
// ErrReadOnly. Writes wait while Check reads the store of record and each collection's
// indexes (about 30 s for a million passages); searches go on.
func (m *Memory) Check(ctx context.Context, repair bool) (CheckReport, error) {
	var rep CheckReport
	ck := &checker{m: m}
	if m.closed.Load() {
		return rep, ErrClosed
	}
	if m.cluster != nil {
		return rep, m.clusterUnsupported("Memory.Check")
	}
	if m.remote != nil {
		return rep, m.errNotRemote("check")
	}
	if repair {
		if err := m.writable(); err != nil {
			return rep, err
		}
	}
	bc, err := guardCheck("*", dbName, func() (IndexCheck, error) {
		// bbolt's check reads the freelist, which only writers change: none may run.
		m.wmu.Lock()
		defer m.wmu.Unlock()
		return ck.checkBolt()
	})
	if err != nil {
		return rep, err
	}
	rep.Indexes = append(rep.Indexes, bc)
	// Records missing from damaged pages are not a reason to count the counters again.
	ck.fileDamaged = bc.StoreDamage
	names, err := m.reg.collectionNames()
	if err != nil {
		return rep, err
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		s, err := m.Collection(name).state(false)
		if errors.Is(err, ErrCorrupt) {
			// Its counters or change log cannot be read, nor its records counted: a finding.
			rep.Indexes = append(rep.Indexes, IndexCheck{Collection: name, Index: "store", SampleSkipped: "not loaded",
				StoreDamage: true, Problems: []string{"cannot be loaded: " + oneLine(err)},
				Notes: []string{"the store of record itself is damaged: restore store.db from a backup"}})
			continue
		}
		if err != nil {
			return rep, err
		}
		if s == nil {
			continue
		}
		cc := IndexCheck{Collection: s.Name, Index: countersEntry, SampleSkipped: "not checked"}
		sc, err := guardCheck(s.Name, "store", func() (IndexCheck, error) {
			m.wmu.Lock() // no write between the records read and the counters they are held to
			defer m.wmu.Unlock()
			var err error
			cc, err = ck.checkCounters(s, repair)
			if err != nil {
				return IndexCheck{}, err
			}
			return ck.checkStore(s, &cc, repair)
		})
		if err != nil {
			return rep, err
		}
		sc.StoreDamage = len(sc.Problems) > 0
		rep.Indexes = append(rep.Indexes, sc, cc)
		checks, err := ck.checkCollection(s, repair)
		if errors.Is(err, ErrCorrupt) {
			// Its indexes cannot be opened or rebuilt: rebuilding reads only the store of
			// record, so it is damaged (a record that cannot be read, say): a finding.
			checks = []IndexCheck{{Collection: name, Index: indexesEntry, SampleSkipped: "not opened", StoreDamage: true,
				Problems: []string{"cannot be opened or rebuilt: " + oneLine(err)}}}
		} else if err != nil {
			return rep, fmt.Errorf("memory: check collection %s: %w", store.ShowKey(name), err)
		}
		rep.Indexes = append(rep.Indexes, checks...)
	}
	return rep, nil
}

// checkCollection checks (and with repair rebuilds) the derived indexes of s, holding the
// writer lock so that no write changes the store of record meanwhile: first as they are on
// disk (when they are not open), then open, then rebuilt where they disagree.
func (ck checker) checkCollection(s *colState, repair bool) ([]IndexCheck, error) {
	m := ck.m
	m.wmu.Lock()
	defer m.wmu.Unlock()
	ids, err := ck.checkSampleIDs(s.Name)
	if err != nil {
		return nil, err
	}
	checks := ck.checkAllOnDisk(s, ids)
	unlock, err := m.reg.lockOpen(s)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []IndexCheck
	for i, k := range m.dx.kinds() {
		if s.Indexes[i] == nil {
			continue // the kind does not apply (vectors without an embedder)
		}
		c := &checks[i]
		if err := ck.checkOpened(s, k, s.Indexes[i], ids, c); err != nil {
			return nil, err
		}
		if repair && len(c.Problems) > 0 && !c.Repaired {
			if err := ck.repairChecked(s, i, k, ids, c); err != nil {
				return nil, err
			}
		}
		out = append(out, *c)
	}
	return out, nil
}

// checkAllOnDisk checks every kind of index of s as it is on disk, before opening catches
// it up or rebuilds it; nothing for the kinds open already (opened by a write, which the
// caller's writer lock keeps out, or by a search, which caught them up). One entry per
// kind, in Memory.kinds order.
func (ck checker) checkAllOnDisk(s *colState, ids []string) []IndexCheck {
	m := ck.m
	kinds := m.dx.kinds()
	checks := make([]IndexCheck, len(kinds))
	for i, k := range kinds {
		checks[i] = IndexCheck{Collection: s.Name, Index: k.name}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	bm, vec := s.bm25, s.vec // those of the kinds open (a search's): kept
	for i, k := range kinds {
		if s.Indexes != nil && !s.Closed(func(sk store.Kind) bool { return sk.Name == k.name }) {
			continue
		}
		ck.checkOnDisk(s, k, ids, &checks[i])
	}
	s.bm25, s.vec = bm, vec // set by the kinds' open, closed again
	return checks
}

// checkOpened checks the open index ix of kind k against the store of record, into c,
// which holds what was found on disk: problems that opening got past (a rebuild, on disk
// or in memory for a read-only store) are kept, and said to be repaired when the writable
// open rebuilt the index.
func (ck checker) checkOpened(s *colState, k derivedKind, ix store.Index, ids []string, c *IndexCheck) error {
	m := ck.m
	onDisk := c.Problems
	live := IndexCheck{}
	if err := ck.checkLive(s, k, ix, ids, &live); err != nil {
		return err
	}
	c.Count, c.Seq, c.StoreUnits, c.StoreSeq = live.Count, live.Seq, live.StoreUnits, live.StoreSeq
	if c.SampleSkipped == "" || live.SampleSkipped != "" {
		c.Sampled, c.Missing, c.SampleSkipped = live.Sampled, live.Missing, live.SampleSkipped
	}
	c.Problems = append(onDisk, live.Problems...)
	if len(onDisk) > 0 && len(live.Problems) == 0 {
		if m.opts.ReadOnly {
			c.Notes = append(c.Notes, "rebuilt in memory for this process only: run check --repair")
		} else {
			c.Repaired = true
			c.Notes = append(c.Notes, "rebuilt from the store of record when opened")
		}
	}
	return nil
}

// repairChecked rebuilds index i of s (kind k), which c found disagreeing, and checks it
// again: c's figures become the rebuilt index's, its Problems keep what disagreed.
func (ck checker) repairChecked(s *colState, i int, k derivedKind, ids []string, c *IndexCheck) error {
	if err := ck.rebuildIndex(s, i); err != nil {
		return fmt.Errorf("rebuilding its %s index: %w", k.name, err)
	}
	again := IndexCheck{}
	if err := ck.checkLive(s, k, s.Indexes[i], ids, &again); err != nil {
		return err
	}
	c.Repaired = len(again.Problems) == 0
	c.Count, c.Seq, c.Sampled, c.Missing, c.SampleSkipped = again.Count, again.Seq, again.Sampled, again.Missing, again.SampleSkipped
	if !c.Repaired {
		c.Problems = append(c.Problems, "still disagrees after the rebuild: "+strings.Join(again.Problems, "; "))
	}
	return nil
}

// rebuildIndex rebuilds index i of s from the store of record (the caller holds the
// writer lock and s.mu, with the indexes open). Check's one way into the rebuild path.
func (ck checker) rebuildIndex(s *colState, i int) error {
	m := ck.m
	m.log.Warn("memory: check: rebuilding a derived index from the store of record", "collection", s.Name, "index", m.dx.kinds()[i].name)
	return m.db.RepairIndex(&s.Collection, i)
}

// checkOnDisk checks collection s's index of kind k as its files are, when it persists
// itself (BM25; a FAISS index with a directory). An index that does not persist is loaded
// from the store of record on open, so there is nothing to check before that.
func (ck checker) checkOnDisk(s *colState, k derivedKind, ids []string, c *IndexCheck) {
	m := ck.m
	dir := m.dx.derivedDir(k, s.Name)
	if dir == "" {
		return
	}
	if _, err := os.Stat(dir); err != nil {
		if s.Units > 0 && k.name == bm25Dir {
			c.Problems = append(c.Problems, "missing on disk")
		}
		return
	}
	var ix store.Index // the BM25 kind checks root.bolt and the segments before Bleve maps them
	err := store.Guard(k.name+" open", func() error {
		var err error
		ix, err = k.open(m, s, dir)
		return err
	})
	if err != nil {
		c.Problems = append(c.Problems, "cannot be opened: "+oneLine(err))
		return
	}
	if ix == nil {
		return
	}
	defer store.Guard(k.name+" close", ix.Close)
	if vd, ok := ix.(*vectorDerived); ok {
		if d, ok := vd.ix.(vectorstore.Discarder); ok {
			switch err := d.Discarded(); {
			case errors.Is(err, vectorstore.ErrCorrupt):
				c.Problems = append(c.Problems, "its files are damaged and were not used (rebuilt on open): "+oneLine(err))
				return
			case err != nil:
				c.Notes = append(c.Notes, "its files were not used (rebuilt on open): "+oneLine(err))
				return
			}
		}
	}
	seq := ix.Seq()
	switch {
	case seq == 0 && k.name != bm25Dir:
		return // not persisted (loaded on open)
	case seq > s.LastSeq:
		c.Problems = append(c.Problems, fmt.Sprintf("reflects change %d, after the store of record's last (%d)", seq, s.LastSeq))
		return
	case seq < s.LastSeq:
		if seq < s.Trimmed || seq == 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("on disk at change %d, before the change log (from %d): rebuilt on open", seq, s.Trimmed))
		} else {
			c.Notes = append(c.Notes, fmt.Sprintf("on disk at change %d: caught up from the change log on open", seq))
		}
		return
	}
	live := IndexCheck{}
	if err := ck.checkLive(s, k, ix, ids, &live); err != nil {
		c.Problems = append(c.Problems, "cannot be checked: "+oneLine(err))
		return
	}
	for _, p := range live.Problems {
		c.Problems = append(c.Problems, "on disk: "+p)
	}
	c.Sampled, c.Missing, c.SampleSkipped = live.Sampled, live.Missing, live.SampleSkipped
}

// checkLive compares index ix of s (open, caught up) with the store of record.
func (ck checker) checkLive(s *colState, k derivedKind, ix store.Index, ids []string, c *IndexCheck) error {
	m := ck.m
	c.StoreSeq = s.LastSeq
	c.StoreUnits = s.Units
	if k.name == vecDir {
		n, err := m.db.VectorCount(s.Name)
		if err != nil {
			return err
		}
		c.StoreUnits = n
	}
	return store.Guard(k.name+" check", func() error {
		ch, ok := ix.(store.IDChecker)
		if vd, isVec := ix.(*vectorDerived); isVec {
			// A vector index cannot list its ids: each sampled id's stored vector is searched
			// for (vectorDerived.Missing probes only a persisted index, and only a few ids).
			ch, ok = vectorProbe{m: m, col: s.Name, ix: vd.ix}, true
			ids = ids[:min(len(ids), vectorSample)]
			if vl, can := vd.ix.(vectorstore.VectorLookup); can {
				// An index that returns its vectors is looked up, not searched.
				ch = vectorLookupChecker{m: m, col: s.Name, vl: vl}
			}
		}
		switch {
		case !ok:
			c.SampleSkipped, ch = "this index cannot look ids up", nil
		case len(ids) == 0:
			c.SampleSkipped, ch = "no stored ids", nil
		}
		r := store.Compare(&s.Collection, ix, c.StoreUnits, ch, ids)
		c.Seq, c.Sampled, c.Problems = r.Seq, r.Sampled, append(c.Problems, r.Problems...)
		if r.Count >= 0 {
			c.Count = r.Count
		}
		c.Missing = r.Missing[:min(len(r.Missing), 10)]
		if p := verifyVectors(ix); p != "" {
			c.Problems = append(c.Problems, p) // every vector read back, not a sample
		}
		return nil
	})
}

// checkSampleIDs returns the index ids of up to checkSample documents of collection col,
// taken at even steps over its documents (deterministic for a given store).
func (ck checker) checkSampleIDs(col string) ([]string, error) {
	m := ck.m
	return m.db.StepSample(col, checkSample)
}

// oneLine is err's message up to its first line break (a recovered panic carries its
// stack after it).
func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// vectorSample is how many stored ids Check looks up in a vector index (each one a search).
const vectorSample = 20

// vectorProbe looks ids up in a vector index that cannot say which ids it holds: the
// stored vector of each id, searched for, must find the id itself among the best hits (a
// document stored twice with the same text has the same vector: any of them may come first).
type vectorProbe struct {
	m   *Memory
	col string
	ix  vectorstore.Index
}

func (p vectorProbe) Missing(ids []string) ([]string, error) {
	var missing []string
	for _, id := range ids {
		v, err := p.m.db.Vector(p.col, id)
		if err != nil {
			return nil, err
		}
		if v == nil {
			missing = append(missing, id) // no stored vector: the store check reports it
			continue
		}
		hits, err := p.ix.Search(context.Background(), v, 8, nil)
		if err != nil {
			return nil, err
		}
		found := false
		for _, h := range hits {
			if h.ID == id && h.Score >= hits[0].Score-1e-4 {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// The entries of a check report that are neither a derived index nor store.db.
const (
	countersEntry = "counters"
	indexesEntry  = "indexes"
)

// checkCounters reports collection s's counters (the caller holds the writer lock): a
// load or an open of this process that found them damaged, or at odds with an index, has
// counted its records again (Recounted). With repair, a count kept in memory only (a
// read-only open) is persisted. checkStore then holds them to its own full read.
func (ck checker) checkCounters(s *colState, repair bool) (IndexCheck, error) {
	m := ck.m
	c := IndexCheck{Collection: s.Name, Index: countersEntry, SampleSkipped: "held to every record"}
	if r, ok := m.db.Recounted(s.Name); ok {
		c.Problems = append(c.Problems, r.Reason)
		if !r.Persisted && repair {
			if err := ck.recount(s, r.Reason); err != nil {
				return c, err
			}
			r, _ = m.db.Recounted(s.Name)
		}
		if r.Persisted {
			c.Repaired = true
			c.Notes = append(c.Notes, fmt.Sprintf("counted again from the records (%d documents, %d index ids) and persisted", r.Docs, r.Units))
		} else {
			c.Notes = append(c.Notes, fmt.Sprintf("counted again from the records (%d documents, %d index ids) for this process only: check --repair persists the count", r.Docs, r.Units))
		}
	}
	s.mu.RLock()
	c.Count, c.StoreUnits = s.Docs, s.Units
	s.mu.RUnlock()
	return c, nil
}

// recount counts collection s's records again (persisted unless read-only).
func (ck checker) recount(s *colState, reason string) error {
	m := ck.m
	s.mu.Lock()
	defer s.mu.Unlock()
	return m.db.Recount(&s.Collection, reason)
}

// checkStore reads every record and vector of collection s as the store of record holds
// them (the caller holds the writer lock): each record must decode under its own id, and
// with an embedder recorded each index id must have one vector of its dimension. Damage
// found here cannot be repaired from anything else: the entry names the damaged keys. The
// documents and index ids must also number what the collection's counters say; when they
// do not, the counters are what is wrong: that goes to cc (counters), which a repair
// counts again. Records and vectors an older version wrote in a layout whose checksum does
// not cover their key are rewritten in the key-bound one by a repair (store.DB.Rebind).
func (ck checker) checkStore(s *colState, cc *IndexCheck, repair bool) (IndexCheck, error) {
	m := ck.m
	s.mu.RLock()
	lastSeq, ndocs, nunits := s.LastSeq, s.Docs, s.Units
	s.mu.RUnlock()
	c := IndexCheck{Collection: s.Name, Index: "store", StoreSeq: lastSeq, Seq: lastSeq, SampleSkipped: "every record read"}
	dim := 0
	if e := m.man.Embedder; e != nil {
		dim = e.Dim
	}
	t, err := m.db.Tally(s.Name, dim)
	if err != nil {
		return c, err
	}
	c.StoreUnits, c.Count, c.Problems, c.DamagedKeys = t.Units, t.Units, t.Problems, t.Keys
	if t.Damaged > len(t.Problems) {
		c.Problems = append(c.Problems, fmt.Sprintf("%d damaged records or vectors in all", t.Damaged))
	}
	if t.Damaged == 0 && (t.Docs != ndocs || t.Units != nunits) {
		reason := fmt.Sprintf("holds %d documents and %d index ids, its counters say %d and %d", t.Docs, t.Units, ndocs, nunits)
		cc.Problems = append(cc.Problems, reason)
		if ck.fileDamaged {
			// The records read may be fewer than are stored (a damaged page hides some):
			// the counters are left as they are.
			cc.StoreDamage = true
			cc.Notes = append(cc.Notes, "not counted again: store.db is damaged (restore it from a backup)")
		} else if m.opts.ReadOnly {
			cc.Repaired = false
			cc.Notes = append(cc.Notes, "check --repair counts them again")
		} else {
			if err := ck.recount(s, reason); err != nil {
				return c, err
			}
			cc.Repaired = true
			cc.Count, cc.StoreUnits = t.Docs, t.Units
			cc.Notes = append(cc.Notes, "counted again from the records and persisted")
		}
	}
	if t.Sources != "" {
		// The sources index is derived (Collection.Sources): built again from the records.
		cc.Problems = append(cc.Problems, t.Sources)
		switch {
		case ck.fileDamaged:
			cc.StoreDamage = true
			cc.Notes = append(cc.Notes, "the sources index is not rebuilt: store.db is damaged (restore it from a backup)")
		case m.opts.ReadOnly:
			cc.Repaired = false
			cc.Notes = append(cc.Notes, "a writable open rebuilds the sources index from the records")
		default:
			if err := m.db.BuildSources(s.Name); err != nil {
				return c, err
			}
			cc.Repaired = true
			cc.Notes = append(cc.Notes, "the sources index was built again from the records")
		}
	}
	if dim > 0 && t.Vectors != t.Units {
		c.Problems = append(c.Problems, fmt.Sprintf("holds %d vectors for %d index ids", t.Vectors, t.Units))
	}
	if t.Unbound > 0 {
		switch {
		case repair && !m.opts.ReadOnly:
			n, err := m.db.Rebind(s.Name)
			if err != nil {
				return c, err
			}
			c.Notes = append(c.Notes, fmt.Sprintf("%d records or vectors written by an older version rewritten so that their checksums cover their ids", n))
		default:
			c.Notes = append(c.Notes, fmt.Sprintf("%d records or vectors written by an older version: their checksums do not cover their ids (check --repair rewrites them)", t.Unbound))
		}
	}
	if len(c.Problems) > 0 {
		what := "restore store.db from a backup"
		if len(t.Keys) > 0 {
			what = fmt.Sprintf("damaged: %s; %s", store.ShowKeys(t.Keys), what)
		}
		c.Notes = append(c.Notes, "the store of record itself is damaged, and check --repair cannot rebuild it: "+what)
	}
	return c, nil
}

// checkBolt checks store.db's pages (store.DB.Consistency: every page reachable once and
// whole, the freelist right, read without bbolt, which would crash on a damaged page);
// its findings, if any, are one report entry. The caller holds the writer lock.
func (ck checker) checkBolt() (IndexCheck, error) {
	m := ck.m
	c := IndexCheck{Collection: "*", Index: dbName, SampleSkipped: "every page checked"}
	found, err := m.db.Consistency(5)
	if errors.Is(err, ErrCorrupt) { // a page that could not be read: a finding
		c.Problems = append(c.Problems, oneLine(err))
		c.Notes = append(c.Notes, "store.db is damaged: restore it from a backup")
		c.StoreDamage = true
		return c, nil
	}
	c.Problems = append(c.Problems, found...)
	if len(c.Problems) > 0 {
		c.Notes = append(c.Notes, "store.db is damaged: restore it from a backup")
		c.StoreDamage = true
	}
	return c, err
}

// guardCheck runs a check of the store of record; a panic or fault reading a damaged page
// is a finding (ErrCorrupt in the entry), not a crash.
func guardCheck(col, index string, fn func() (IndexCheck, error)) (c IndexCheck, err error) {
	perr := store.Guard("check", func() error {
		c, err = fn()
		return nil
	})
	c.Collection, c.Index = col, index
	if perr != nil {
		c.Problems = append(c.Problems, oneLine(perr))
		c.StoreDamage = true
	}
	return c, err
}

// vectorLookupChecker looks ids up in a vector index that returns its vectors: each one
// must hold the stored vector (vectorLookupMissing).
type vectorLookupChecker struct {
	m   *Memory
	col string
	vl  vectorstore.VectorLookup
}

func (c vectorLookupChecker) Missing(ids []string) ([]string, error) {
	return vectorLookupMissing(c.m, c.col, c.vl, ids)
}

// checker runs the checks of Check, and their repairs, over the store m.
type checker struct {
	m *Memory
	// fileDamaged: the check of store.db's pages found damage (set before the
	// collections are checked).
	fileDamaged bool
}
