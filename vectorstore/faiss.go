//go:build faiss

package vectorstore

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	faiss "github.com/DataIntelligenceCrew/go-faiss"

	"github.com/agentmem/memory/internal/errkind"
	"github.com/agentmem/memory/internal/faisslink"
	"github.com/agentmem/memory/internal/topk"
	"github.com/agentmem/memory/internal/vecmath"
)

// The FAISS backend's own kinds (see errors.go).
var (
	errFaissClosed  = errkind.New("vectorstore: FAISS index is closed", ErrClosed)
	errFaissFactory = errkind.New("vectorstore: unsupported FAISS factory string", ErrBadConfig)
)

// faissBuilt: this build has the FAISS backend.
const faissBuilt = true

// Default tuning of the FAISS backend; see BENCHMARKS.md §6 for the recall they reach.
const (
	faissDefaultEfSearch       = 128
	faissDefaultEfConstruction = 40
	faissDefaultCompactPercent = 20
	faissMinTrainPerList       = 39 // faiss warns below 39 training points per centroid
)

func faissDefaultNprobe(nlist int) int {
	return min(nlist, max(16, nlist/32))
}

func init() {
	RegisterIndex(FaissBackend, func(cfg IndexConfig) (Index, error) { return newFaissIndex(cfg) })
}

type faissKind int

const (
	faissFlat faissKind = iota
	faissIVF
	faissHNSW
)

func (k faissKind) String() string {
	switch k {
	case faissIVF:
		return "IVF"
	case faissHNSW:
		return "HNSW"
	default:
		return "Flat"
	}
}

// faissSpec is a parsed factory string.
type faissSpec struct {
	kind  faissKind
	nlist int // IVF lists
	m     int // HNSW links per node
}

// canonical is the factory string as stored in the persisted metadata.
func (s faissSpec) canonical() string {
	switch s.kind {
	case faissIVF:
		return fmt.Sprintf("IVF%d,Flat", s.nlist)
	case faissHNSW:
		return fmt.Sprintf("HNSW%d", s.m)
	default:
		return "Flat"
	}
}

// description is the string handed to faiss's index_factory. Flat and HNSW sit inside an
// IndexIDMap2, which maps our int64 labels and can reconstruct by label; IVF stores labels
// natively (an IDMap around IVF would break remove_ids).
func (s faissSpec) description() string {
	switch s.kind {
	case faissIVF:
		return fmt.Sprintf("IVF%d,Flat", s.nlist)
	case faissHNSW:
		return fmt.Sprintf("IDMap2,HNSW%d", s.m)
	default:
		return "IDMap2,Flat"
	}
}

// parseFaissFactory accepts "Flat" (or ""), "IVF<n>,Flat" and "HNSW<m>" (or "HNSW<m>,Flat").
func parseFaissFactory(s string) (faissSpec, error) {
	f := strings.TrimSpace(s)
	bad := func() (faissSpec, error) {
		return faissSpec{}, fmt.Errorf("%w: %w %q (want Flat, IVF<n>,Flat or HNSW<m>)", ErrBadConfig, errFaissFactory, s)
	}
	num := func(digits string, lo, hi int) (int, bool) {
		n, err := strconv.Atoi(digits)
		return n, err == nil && n >= lo && n <= hi && strconv.Itoa(n) == digits
	}
	switch {
	case f == "" || f == "Flat":
		return faissSpec{kind: faissFlat}, nil
	case strings.HasPrefix(f, "IVF") && strings.HasSuffix(f, ",Flat"):
		n, ok := num(strings.TrimSuffix(strings.TrimPrefix(f, "IVF"), ",Flat"), 1, 1<<24)
		if !ok {
			return bad()
		}
		return faissSpec{kind: faissIVF, nlist: n}, nil
	case strings.HasPrefix(f, "HNSW"):
		n, ok := num(strings.TrimSuffix(strings.TrimPrefix(f, "HNSW"), ",Flat"), 2, 512)
		if !ok {
			return bad()
		}
		return faissSpec{kind: faissHNSW, m: n}, nil
	}
	return bad()
}

// faissIndex is the FAISS dense index (backend "faiss"). It maps string ids to int64 labels
// (stable, persisted, never reused), normalises vectors for Cosine and ranks by inner product.
//
// Factory "Flat" is exact; "IVF<n>,Flat" buffers vectors (searched exactly) until
// Params["trainSize"] arrive or Train is called; "HNSW<m>" deletes by tombstones and
// rebuilds once they exceed Params["compactPercent"] of the graph.
//
// A search with a Filter over-fetches (doubling k) from faiss and falls back to an exact scan
// of the accepted vectors when the filter is selective, so it returns the full k whenever k
// vectors are accepted; for Flat the result is the exact filtered top-k (see Search).
// With Dir set it implements Durable.
type faissIndex struct {
	cfg    IndexConfig
	spec   faissSpec
	cosine bool

	nprobe, efSearch, efConstruction, trainSize, compactPercent int

	mu     sync.RWMutex
	idx    *faiss.IndexImpl // nil for an IVF index that is not trained yet
	cp     unsafe.Pointer   // idx's faissIndex*
	labels map[int64]string // live labels
	ids    map[string]int64
	next   int64 // next label to hand out

	// IVF before training: vectors wait here, searched exactly.
	bufLabels []int64
	bufVecs   []float32

	seq    uint64    // store sequence the persisted state reflects
	gen    uint64    // generation of the files in Dir
	files  [2]string // that generation's index and buffer file names
	crcs   [2]uint32 // their CRC-32C (0: not recorded)
	dirty  bool      // changed since the last write
	closed bool
	gpu    faissGPU

	discarded error // why the files in Dir were not used when opened (Discarded)
}

var (
	_ Index     = (*faissIndex)(nil)
	_ Durable   = (*faissIndex)(nil)
	_ Discarder = (*faissIndex)(nil)
)

// newFaissIndex builds a FAISS index from cfg (cfg.Backend is ignored). With cfg.Dir set it
// loads the state persisted there, if any and if it matches cfg (dimension, metric, factory);
// otherwise it starts empty with Seq 0, so the store rebuilds it.
func newFaissIndex(cfg IndexConfig) (*faissIndex, error) {
	if cfg.Dim <= 0 {
		return nil, fmt.Errorf("%w: dim %d", ErrBadConfig, cfg.Dim)
	}
	if cfg.Metric == "" {
		cfg.Metric = Cosine
	}
	if cfg.Metric != Cosine && cfg.Metric != InnerProduct {
		return nil, fmt.Errorf("%w: metric %q", ErrBadConfig, cfg.Metric)
	}
	spec, err := parseFaissFactory(cfg.Factory)
	if err != nil {
		return nil, err
	}
	x := &faissIndex{
		cfg:            cfg,
		spec:           spec,
		cosine:         cfg.Metric == Cosine,
		efSearch:       faissDefaultEfSearch,
		efConstruction: faissDefaultEfConstruction,
		compactPercent: faissDefaultCompactPercent,
		labels:         map[int64]string{},
		ids:            map[string]int64{},
	}
	if spec.kind == faissIVF {
		x.nprobe = faissDefaultNprobe(spec.nlist)
		x.trainSize = faissMinTrainPerList * spec.nlist
	}
	for name, v := range cfg.Params {
		if err := x.setParam(name, v); err != nil {
			return nil, err
		}
	}
	if cfg.Dir != "" {
		if err := x.load(); err != nil {
			return nil, err
		}
	}
	if x.idx == nil && spec.kind != faissIVF {
		if x.idx, x.cp, err = x.newFaiss(); err != nil {
			return nil, err
		}
	}
	x.gpu.attach(x)
	x.gpu.sync(x.idx)
	return x, nil
}

func (x *faissIndex) setParam(name string, v int) error {
	bad := func() error { return fmt.Errorf("%w: FAISS param %s=%d", ErrBadConfig, name, v) }
	if v <= 0 {
		return bad()
	}
	switch name {
	case FaissParamNprobe:
		if x.spec.kind == faissIVF {
			x.nprobe = min(v, x.spec.nlist)
		}
	case FaissParamEfSearch:
		x.efSearch = v
	case FaissParamEfConstruction:
		x.efConstruction = v
	case FaissParamTrainSize:
		if x.spec.kind == faissIVF {
			if v < x.spec.nlist {
				return fmt.Errorf("%w: FAISS trainSize %d < nlist %d", ErrBadConfig, v, x.spec.nlist)
			}
			x.trainSize = v
		}
	case FaissParamCompactPercent:
		if v > 100 {
			return bad()
		}
		x.compactPercent = v
	default:
		return fmt.Errorf("%w: unknown FAISS param %q", ErrBadConfig, name)
	}
	return nil
}

// newFaiss creates an empty faiss index of x's kind and applies the tuning parameters.
func (x *faissIndex) newFaiss() (*faiss.IndexImpl, unsafe.Pointer, error) {
	idx, err := faiss.IndexFactory(x.cfg.Dim, x.spec.description(), faiss.MetricInnerProduct)
	if err != nil {
		return nil, nil, fmt.Errorf("vectorstore: faiss index_factory %q: %w", x.spec.description(), err)
	}
	p, err := x.configure(idx)
	if err != nil {
		idx.Delete()
		return nil, nil, err
	}
	return idx, p, nil
}

// configure applies nprobe / ef settings (and the IVF hashtable direct map) to idx.
func (x *faissIndex) configure(idx *faiss.IndexImpl) (unsafe.Pointer, error) {
	p, err := cptr(idx)
	if err != nil {
		return nil, err
	}
	switch x.spec.kind {
	case faissHNSW:
		if err := faisslink.SetHNSWEf(p, x.efConstruction, x.efSearch); err != nil {
			return nil, err
		}
	case faissIVF:
		ps, err := faiss.NewParameterSpace()
		if err != nil {
			return nil, fmt.Errorf("vectorstore: faiss ParameterSpace: %w", err)
		}
		defer ps.Delete()
		if err := ps.SetIndexParameter(idx, "nprobe", float64(x.nprobe)); err != nil {
			return nil, fmt.Errorf("vectorstore: faiss nprobe: %w", err)
		}
		if err := faisslink.UseIVFHashDirectMap(p); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Kind reports the index kind: "Flat", "IVF" or "HNSW".
func (x *faissIndex) Kind() string { return x.spec.kind.String() }

// Device reports where searches run: "cpu", or "gpu:<n>" with the faissgpu build tag and a GPU.
func (x *faissIndex) Device() string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.gpu.device()
}

// Trained reports whether the faiss index exists (always true but for an IVF index still
// buffering its training vectors).
func (x *faissIndex) Trained() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.idx != nil
}

// Train trains an IVF index now on the vectors buffered so far (at least nlist of them,
// else ErrFaissUntrained) and moves them into it. It is a no-op for other kinds and for an
// index already trained.
func (x *faissIndex) Train(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errFaissClosed
	}
	if x.spec.kind != faissIVF || x.idx != nil {
		return nil
	}
	if n := len(x.bufLabels); n < x.spec.nlist {
		return fmt.Errorf("%w: %d vectors buffered, IVF%d needs at least %d", ErrFaissUntrained, n, x.spec.nlist, x.spec.nlist)
	}
	return x.trainLocked()
}

// trainLocked trains a new IVF index on the buffer and moves the buffer into it.
func (x *faissIndex) trainLocked() error {
	idx, p, err := x.newFaiss()
	if err != nil {
		return err
	}
	if gi, ok := x.gpu.trainAdd(idx, x.bufVecs, x.bufLabels); ok {
		// Trained and filled on the GPU; gi is its CPU copy, the new master.
		idx.Delete()
		if p, err = x.configure(gi); err != nil {
			gi.Delete()
			x.gpu.sync(nil)
			return err
		}
		slog.Debug("faiss: IVF trained on the GPU", "nlist", x.spec.nlist, "vectors", len(x.bufLabels))
		x.idx, x.cp = gi, p
		x.bufLabels, x.bufVecs = nil, nil
		x.dirty = true
		return nil
	}
	if err := idx.Train(x.bufVecs); err != nil {
		idx.Delete()
		return fmt.Errorf("vectorstore: faiss train IVF%d on %d vectors: %w", x.spec.nlist, len(x.bufLabels), err)
	}
	if err := idx.AddWithIDs(x.bufVecs, x.bufLabels); err != nil {
		idx.Delete()
		return fmt.Errorf("vectorstore: faiss add: %w", err)
	}
	slog.Debug("faiss: IVF trained", "nlist", x.spec.nlist, "vectors", len(x.bufLabels))
	x.idx, x.cp = idx, p
	x.bufLabels, x.bufVecs = nil, nil
	x.dirty = true
	x.gpu.sync(x.idx)
	return nil
}

// prepare copies v into dst, normalised for Cosine.
func (x *faissIndex) prepare(dst, v []float32) {
	if x.cosine {
		vecmath.NormalizeInto(dst, v)
		return
	}
	copy(dst, v)
}

// Add inserts or replaces the vectors of ids (for a repeated id, the last vector wins).
func (x *faissIndex) Add(ctx context.Context, ids []string, vecs [][]float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(ids) != len(vecs) {
		return fmt.Errorf("%w: %d ids but %d vectors", ErrBadBatch, len(ids), len(vecs))
	}
	last := make(map[string]int, len(ids))
	for i, id := range ids {
		if id == "" {
			return fmt.Errorf("%w: empty id at position %d", ErrBadBatch, i)
		}
		if err := checkVector(vecs[i], x.cfg.Dim, fmt.Sprintf("vector of %q", id)); err != nil {
			return err
		}
		last[id] = i
	}
	if len(last) == 0 {
		return nil
	}
	d := x.cfg.Dim
	order := make([]int, 0, len(last))
	for i, id := range ids {
		if last[id] == i {
			order = append(order, i)
		}
	}
	data := make([]float32, len(order)*d)
	for j, i := range order {
		x.prepare(data[j*d:(j+1)*d], vecs[i])
	}

	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errFaissClosed
	}
	newLabels := make([]int64, len(order))
	var old []int64
	for j, i := range order {
		newLabels[j] = x.next + int64(j)
		if l, ok := x.ids[ids[i]]; ok {
			old = append(old, l)
		}
	}
	if x.idx == nil { // IVF, untrained
		x.bufLabels = append(x.bufLabels, newLabels...)
		x.bufVecs = append(x.bufVecs, data...)
	} else {
		if err := x.idx.AddWithIDs(data, newLabels); err != nil {
			return fmt.Errorf("vectorstore: faiss add %d vectors: %w", len(order), err)
		}
		x.gpu.add(data, newLabels)
	}
	x.next += int64(len(order))
	if err := x.removeLocked(old); err != nil {
		return err
	}
	for j, i := range order {
		x.ids[ids[i]] = newLabels[j]
		x.labels[newLabels[j]] = ids[i]
	}
	x.dirty = true
	if x.idx == nil && len(x.bufLabels) >= x.trainSize {
		if err := x.trainLocked(); err != nil {
			return err
		}
	}
	return x.maybeCompactLocked()
}

// Delete removes ids; unknown ids are ignored.
func (x *faissIndex) Delete(ctx context.Context, ids ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errFaissClosed
	}
	var old []int64
	for _, id := range ids {
		if l, ok := x.ids[id]; ok {
			old = append(old, l)
			delete(x.ids, id) // a repeated id is removed once
		}
	}
	if len(old) == 0 {
		return nil
	}
	if err := x.removeLocked(old); err != nil {
		return err
	}
	x.dirty = true
	return x.maybeCompactLocked()
}

// removeLocked drops labels from the maps and from faiss (Flat, IVF) or the IVF buffer; HNSW
// labels simply stop being live (tombstones).
func (x *faissIndex) removeLocked(labels []int64) error {
	if len(labels) == 0 {
		return nil
	}
	dead := make(map[int64]bool, len(labels))
	for _, l := range labels {
		dead[l] = true
		if id, ok := x.labels[l]; ok {
			delete(x.labels, l)
			if x.ids[id] == l {
				delete(x.ids, id)
			}
		}
	}
	switch {
	case x.idx == nil:
		d := x.cfg.Dim
		j := 0
		for i, l := range x.bufLabels {
			if dead[l] {
				continue
			}
			x.bufLabels[j] = l
			copy(x.bufVecs[j*d:(j+1)*d], x.bufVecs[i*d:(i+1)*d])
			j++
		}
		x.bufLabels, x.bufVecs = x.bufLabels[:j], x.bufVecs[:j*d]
	case x.spec.kind == faissIVF:
		// The hashtable direct map only accepts an IDSelectorArray.
		if _, err := faisslink.RemoveIDsArray(x.cp, labels); err != nil {
			return fmt.Errorf("vectorstore: faiss remove %d ids: %w", len(labels), err)
		}
		x.gpu.removed(len(labels), x.idx)
	case x.spec.kind == faissFlat:
		sel, err := faiss.NewIDSelectorBatch(labels)
		if err != nil {
			return fmt.Errorf("vectorstore: faiss id selector: %w", err)
		}
		defer sel.Delete()
		if _, err := x.idx.RemoveIDs(sel); err != nil {
			return fmt.Errorf("vectorstore: faiss remove %d ids: %w", len(labels), err)
		}
		x.gpu.removed(len(labels), x.idx)
	}
	return nil
}

// maybeCompactLocked rebuilds an HNSW graph whose tombstones exceed compactPercent.
func (x *faissIndex) maybeCompactLocked() error {
	if x.spec.kind != faissHNSW || x.idx == nil {
		return nil
	}
	n := x.idx.Ntotal()
	dead := n - int64(len(x.labels))
	if dead == 0 || dead*100 <= int64(x.compactPercent)*n {
		return nil
	}
	return x.rebuildLocked()
}

// Compact rebuilds an HNSW index without its tombstones now (a no-op for other kinds).
func (x *faissIndex) Compact(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errFaissClosed
	}
	if x.spec.kind != faissHNSW || x.idx == nil || x.idx.Ntotal() == int64(len(x.labels)) {
		return nil
	}
	return x.rebuildLocked()
}

// Tombstones reports how many deleted vectors an HNSW graph still holds.
func (x *faissIndex) Tombstones() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.idx == nil {
		return 0
	}
	return int(x.idx.Ntotal()) - len(x.labels)
}

// rebuildLocked builds a fresh index from the live vectors (same labels).
func (x *faissIndex) rebuildLocked() error {
	live := make([]int64, 0, len(x.labels))
	for l := range x.labels {
		live = append(live, l)
	}
	sort.Slice(live, func(i, j int) bool { return live[i] < live[j] })
	d := x.cfg.Dim
	data := make([]float32, len(live)*d)
	for i, l := range live {
		if err := reconstruct(x.cp, l, data[i*d:(i+1)*d]); err != nil {
			return err
		}
	}
	idx, p, err := x.newFaiss()
	if err != nil {
		return err
	}
	if len(live) > 0 {
		if err := idx.AddWithIDs(data, live); err != nil {
			idx.Delete()
			return fmt.Errorf("vectorstore: faiss rebuild: %w", err)
		}
	}
	slog.Debug("faiss: rebuilt without tombstones", "kind", x.spec.kind, "live", len(live), "dropped", x.idx.Ntotal()-int64(len(live)))
	x.idx.Delete()
	x.idx, x.cp = idx, p
	x.dirty = true
	x.gpu.sync(x.idx)
	return nil
}

// Len is the number of live vectors.
func (x *faissIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.labels)
}

// faissOverfetchFactor bounds the filtered over-fetch: past faissOverfetchFactor*k results
// (and at least faissOverfetchMin) a filter is selective enough that scanning the accepted
// vectors exactly is cheaper.
const (
	faissOverfetchFactor = 16
	faissOverfetchMin    = 256
)

// Search returns up to k hits accepted by f, best first (score = inner product of the
// normalised vectors for Cosine).
//
// Without a filter it asks faiss for k (more while HNSW tombstones hide some). With a filter
// it asks for 2k and doubles while fewer than k accepted hits come back, up to
// max(16k, 256) candidates; then it scans the accepted vectors exactly (reconstructed from
// faiss). Hence it returns min(k, accepted) hits. For Flat the result is the exact filtered
// top-k: faiss's top-kk list is exact, and any accepted vector outside it scores no higher
// than every vector in it, so the first k accepted entries of the list are the best k
// accepted ones (ties aside); when the list is too short the exact scan decides. For IVF and
// HNSW the over-fetched candidates carry the index's own approximation (recall of the
// filtered top-k is that of an ANN top-kk search); the exact fallback is exact.
func (x *faissIndex) Search(ctx context.Context, q []float32, k int, f Filter) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkVector(q, x.cfg.Dim, "query"); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, nil
	}
	qv := make([]float32, len(q))
	x.prepare(qv, q)

	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return nil, errFaissClosed
	}
	return x.searchLocked(qv, k, f)
}

// searchLocked is Search for the prepared query qv and k > 0, with x.mu held.
func (x *faissIndex) searchLocked(qv []float32, k int, f Filter) ([]Hit, error) {
	if x.idx == nil {
		return x.scanBuffer(qv, k, f), nil
	}
	live := len(x.labels)
	// The GPU replica may still hold removed vectors (tombstones, skipped below).
	n := int(x.idx.Ntotal()) + x.gpu.extra()
	if live == 0 {
		return nil, nil
	}
	target := k
	if f == nil {
		target = min(k, live)
	}
	// One candidate beyond k shows whether a tie at the cut-off may continue past the list.
	kk := k + 1
	if f != nil || n > live {
		kk = 2 * k
	}
	kk = min(kk, n)
	limit := max(faissOverfetchFactor*k, faissOverfetchMin)
	var hits []Hit
	for {
		var last float32
		var err error
		if hits, last, err = x.searchFaiss(qv, kk, f); err != nil {
			return nil, err
		}
		if len(hits) >= target {
			// Ties are ordered by id: when the cut-off score is also the last score faiss
			// returned, tied vectors may lie beyond kk, so fetch more. (With all candidates
			// accepted, the k+1st candidate makes this a real tie, not the k-th hit itself.)
			if kk < n && float64(last) == hits[target-1].Score {
				kk = min(n, 2*kk)
				continue
			}
			faissSortHits(hits)
			return hits[:target], nil
		}
		if kk >= n || (f != nil && kk >= limit) {
			break
		}
		kk = min(n, 2*kk)
	}
	if x.spec.kind == faissFlat && kk >= n {
		faissSortHits(hits)
		return hits, nil // the whole index was ranked exactly
	}
	return x.scanExact(qv, k, f)
}

// searchFaiss runs one faiss search for kk neighbours and keeps the live, accepted ones. last
// is the score of the last neighbour faiss returned (accepted or not).
func (x *faissIndex) searchFaiss(q []float32, kk int, f Filter) (hits []Hit, last float32, err error) {
	dist, lab, onGPU, err := x.gpu.search(q, kk)
	if !onGPU {
		// One query: run it on the calling thread alone (no OpenMP team per call).
		dist, lab, err = faisslink.SearchSerial(x.cp, x.cfg.Dim, q, kk)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("vectorstore: faiss search k=%d: %w", kk, err)
	}
	hits = make([]Hit, 0, min(kk, 256))
	last = float32(math.Inf(-1))
	for i, l := range lab {
		if l < 0 {
			continue
		}
		last = dist[i]
		id, ok := x.labels[l]
		if !ok || (f != nil && !f(id)) {
			continue
		}
		hits = append(hits, Hit{ID: id, Score: float64(dist[i])})
	}
	return hits, last, nil
}

// faissSortHits orders hits by score (desc), then id (asc).
func faissSortHits(hits []Hit) {
	// Hits come from faiss sorted by score; only ties may need reordering (insertion sort).
	for i := 1; i < len(hits); i++ {
		for j := i; j > 0 && faissHitBefore(hits[j], hits[j-1]); j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
}

// scanExact ranks every live vector accepted by f exactly.
func (x *faissIndex) scanExact(q []float32, k int, f Filter) ([]Hit, error) {
	top := newFaissTop(k)
	v := make([]float32, x.cfg.Dim)
	for l, id := range x.labels {
		if f != nil && !f(id) {
			continue
		}
		if err := reconstruct(x.cp, l, v); err != nil {
			return nil, err
		}
		top.Offer(vecmath.Dot(q, v), id)
	}
	return faissTopHits(&top), nil
}

// scanBuffer ranks the buffered vectors of an untrained IVF index exactly.
func (x *faissIndex) scanBuffer(q []float32, k int, f Filter) []Hit {
	top := newFaissTop(k)
	d := x.cfg.Dim
	for i, l := range x.bufLabels {
		id, ok := x.labels[l]
		if !ok || (f != nil && !f(id)) {
			continue
		}
		top.Offer(vecmath.Dot(q, x.bufVecs[i*d:(i+1)*d]), id)
	}
	return faissTopHits(&top)
}

// newFaissTop keeps the k best ids; equal scores rank by id, ascending.
func newFaissTop(k int) topk.Heap[string] {
	return topk.New(k, func(a, b string) bool { return a < b })
}

// faissTopHits returns the heap's ids as hits, best first.
func faissTopHits(h *topk.Heap[string]) []Hit {
	items := h.Sorted()
	out := make([]Hit, len(items))
	for i, it := range items {
		out[i] = Hit{ID: it.Value, Score: float64(it.Score)}
	}
	return out
}

// faissHitBefore reports whether a ranks ahead of b: higher score, then smaller id.
func faissHitBefore(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.ID < b.ID
}

// Seq reports the store sequence number the persisted state reflects (0: nothing).
func (x *faissIndex) Seq() uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.seq
}

// Commit records seq and, with a Dir, writes the index, the id map and seq there (each file
// to a temporary name, then renamed; the metadata file is the commit point).
func (x *faissIndex) Commit(seq uint64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return errFaissClosed
	}
	prev := x.seq
	x.seq = seq
	if x.cfg.Dir == "" || x.cfg.ReadOnly {
		return nil
	}
	if err := x.persistLocked(); err != nil {
		x.seq = prev
		return err
	}
	return nil
}

// Close persists the index if it changed since the last Commit (with the last committed
// seq: the store replays later changes, which are idempotent) and frees it.
func (x *faissIndex) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	var err error
	if x.cfg.Dir != "" && x.dirty && !x.cfg.ReadOnly {
		err = x.persistLocked()
	}
	x.gpu.close()
	if x.idx != nil {
		x.idx.Delete()
		x.idx, x.cp = nil, nil
	}
	return err
}
