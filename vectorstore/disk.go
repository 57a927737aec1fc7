package vectorstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/agentmem/memory/internal/topk"
	"github.com/agentmem/memory/internal/vecmath"
)

func init() {
	RegisterIndex("disk", func(cfg IndexConfig) (Index, error) { return NewDiskIndex(cfg) })
}

// Quantization kept by a [DiskIndex] beside its float32 rows (IndexConfig.Params["quant"]).
const (
	// DiskQuantAuto keeps binary sign codes and searches exactly while the float32 rows fit
	// comfortably in memory (a quarter of physical memory), binary codes then exact rescoring
	// beyond. The default.
	DiskQuantAuto = 0
	// DiskQuantNone keeps float32 rows only: every search is exact.
	DiskQuantNone = 1
	// DiskQuantInt8 keeps per-dimension int8 codes (a scale per dimension, 4x smaller than
	// float32), searched first and rescored exactly.
	DiskQuantInt8 = 2
	// DiskQuantBinary keeps binary sign codes (32x smaller than float32), searched by
	// Hamming distance and rescored exactly.
	DiskQuantBinary = 3
)

// DiskMode is how a [DiskIndex] search scans its rows.
type DiskMode int

// Search modes of a DiskIndex.
const (
	// DiskModeDefault lets the index choose (see [DiskQuantAuto]).
	DiskModeDefault DiskMode = iota
	// DiskExact scores every accepted float32 row: the results equal [flatIndex]'s.
	DiskExact
	// DiskInt8 scans the int8 codes, then rescores the best k x oversample with float32 rows.
	DiskInt8
	// DiskBinary scans the binary codes by Hamming distance, then rescores the best
	// k x oversample with float32 rows.
	DiskBinary
)

// String names the mode.
func (m DiskMode) String() string {
	switch m {
	case DiskExact:
		return "exact"
	case DiskInt8:
		return "int8"
	case DiskBinary:
		return "binary"
	}
	return "default"
}

// DiskSearchOptions tune one search of a [DiskIndex].
type DiskSearchOptions struct {
	// Mode forces a scan (DiskModeDefault: the index's choice). A quantized mode needs the
	// codes the index keeps (DiskInt8 with DiskQuantInt8, DiskBinary with DiskQuantAuto or
	// DiskQuantBinary); asking for others is ErrBadConfig.
	Mode DiskMode
	// Oversample is how many candidates per result the code scan passes to exact
	// rescoring (0: IndexConfig.Params["oversample"], else 4 for int8, 64 for binary, and
	// diskOversampleRowless for rotated binary codes rescored from a RowSource).
	Oversample int
	// NProbe is how many inverted lists a quantized search of an index with lists
	// (Params["nlist"]) scans at most (0: Params["nprobe"], else nlist/16).
	NProbe int
	// ProbeCut lets a search of a Cosine index with lists scan fewer than NProbe of them
	// where the query plainly lies in a few: only the first NProbe/8, when the angle
	// between the query and the lists' centroids, list after list, jumps between two of
	// those (up to the first one left out) by at least ProbeCut % of the spread of the
	// angles of the lists behind the jump. Where the lists' centroids lie about as far from
	// the query one after another (vectors that do not cluster, as hash:768's), all NProbe
	// are scanned as before. It needs NProbe >= 16 (lists behind to measure the spread
	// with). 0: Params["probecut"], else diskProbeCutDefault where NProbe is the index's
	// default (nlist/16) and off where it was asked for (this option or
	// Params["nprobe"]); negative: off.
	ProbeCut int
	// Focus, between 1 and k, is how many of the k results a quantized scan picks its
	// candidates for: Focus x oversample of them (at least k) are rescored exactly, instead
	// of k x oversample, and the best k of those returned. The first Focus results are what a
	// search for Focus finds; those past it are exactly scored but may miss vectors a search
	// for k would return. Hybrid search asks for its fusion window (100) with the focus on
	// the results it returns (10): 10x fewer rows read for rescoring. 0, or >= k: k.
	Focus int
	// Prefilter makes a binary scan without a filter pass (of every code, or of the
	// probed inverted lists') twice over the codes: first it counts the Hamming distance
	// of a sample of the codes (an eighth, in blocks of consecutive rows) to the query's
	// own code (a few popcounts a row), then it scores with the query's nibble tables
	// (binaryScore) only the rows within the distance that keeps about twice Prefilter x k
	// x oversample of them. 0: Params["prefilter"],
	// else diskPrefilterDefault; negative: off (every row scored with the tables).
	Prefilter int
}

// diskSegRowsDefault is how many rows a segment file holds (its last segment may hold
// fewer). A variable so tests can use small segments.
var diskSegRowsDefault = 1 << 16

// diskFlushRows is how many rows an index buffers in memory at least before Commit writes
// them to its segment files (and its metadata; see flushRows); Close writes the rest.
var diskFlushRows = 1 << 16

// diskOversample are the default candidates per result of the code scans.
const (
	diskOversampleInt8   = 4
	diskOversampleBinary = 64
	// diskOversampleRowless is the default of an index without rows of its own that
	// keeps rotated codes (its default: disk_code.go), whose candidates are rescored
	// with vectors read from the store of record: the smallest oversampling that reached
	// recall@10 0.95 against exact float32 on both 200k x 768 sets in an int8 store,
	// every padded bit (bench/diskquant -store int8 -code rotatedpad). Tuned on query
	// set 0 (clustered: 0.938 at 48, 0.955 at 56; hash:768 0.943 at 56, at the plateau
	// of its int8 rescoring), checked on set 1 (-qseed 1): clustered 0.962, hash 0.952.
	diskOversampleRowless = 56
	// diskPrefilterDefault is DiskSearchOptions.Prefilter's default: tuned on query set 0
	// of bench/diskquant's 200k x 768 int8 stores (rotated codes, every padded bit,
	// oversample 56), recall@10 against exact float32 equal to the scan without it on
	// clustered vectors at 4 to 32 (0.9547) and on hash:768 from 8 (0.9426; 4: 0.9414);
	// checked on set 1 (-qseed 1): see BENCHMARKS §0zd.
	diskPrefilterDefault = 8
	// diskProbeCutDefault is DiskSearchOptions.ProbeCut's default (percent): tuned on
	// query set 0 of bench/diskquant's int8 stores, rotated codes, 64 of 1,024 lists
	// (the default nprobe): on 10M x 768 clustered vectors 50, 100 and 200 all kept the
	// recall@10 of a search of every probed list (0.9539) in two thirds of its batch time;
	// on 1M x 768 hash:768 vectors 50 lost 0.016 of it, 100 0.0012, 200 nothing (0.8352).
	// Checked on set 1 (-qseed 1): BENCHMARKS §0zz5.
	diskProbeCutDefault = 200
	// diskProbeFloor: a search that cuts its lists (ProbeCut) scans NProbe/diskProbeFloor
	// of them.
	diskProbeFloor = 8
	// diskProbeCutMin is the fewest lists (NProbe) a search cuts (ProbeCut).
	diskProbeCutMin = 2 * diskProbeFloor
)

// DiskIndex is an Index that lives in files (IndexConfig.Dir): float32 rows of fixed width
// in segment files addressed by ordinal, memory-mapped, with an ordinal-to-id table (sorted
// for lookups), a tombstone bitmap, and optionally quantized codes of each row (binary
// codes: the signs of the row's components, or of its seeded random rotation, see
// DiskCodeAuto; or per-dimension int8). Opening it maps its files and reads no vector, so
// the first search costs what later ones do once the files are in the page cache. Every
// file carries a CRC-32C in disk.json, the commit point, and every 8 KiB block of a
// segment file a checksum (sums-G.bin): a segment whose size and modification time are those recorded at its write
// is not read on open, each block being checked the first time a search reads it; a block
// that fails makes the search fail with an error matching [ErrCorrupt] (never a result
// computed from it). [DiskIndex.Verify] checks every block.
//
// Exact search returns what [flatIndex] returns for the same vectors (same scores bit for
// bit, ties by id). Quantized search scans the codes, keeps the best k x oversample
// candidates, and rescores them with their float32 rows. Which scan a search uses is
// [DiskIndex.SearchPlan]'s sentence.
//
// Rows added since the last write live in memory (exact search) until Commit has
// diskFlushRows of them, or Close. Deleted and replaced rows are tombstoned; a write that
// finds more than a quarter of the rows dead rewrites the live ones (compaction).
// With an empty Dir the index keeps everything in memory. Searches run concurrently;
// Add, Delete, Commit and Close take a write lock.
//
// Opened with IndexConfig.Rows (and a Dir), it keeps no float32 rows of its own on disk:
// only codes, lists and ids, rescoring with rows read from the RowSource (disk_rows.go).
type DiskIndex struct {
	mu         sync.RWMutex
	dim        int
	metric     Metric
	dir        string
	readOnly   bool
	quant      int
	oversample int
	prefilter  int // Params["prefilter"] (DiskSearchOptions.Prefilter)
	probeCut   int // Params["probecut"] (DiskSearchOptions.ProbeCut)
	nlist      int // inverted lists (0: none)
	nprobe     int
	nprobeSet  bool // Params["nprobe"] set nprobe (DiskSearchOptions.ProbeCut)
	threads    int
	segRows    int
	budget     int64     // float32 bytes up to which DiskQuantAuto searches exactly
	rows       RowSource // the rows of the segments (nil: their .f32 files)

	code      int               // DiskCodeSigns or DiskCodeRotated (binary codes; disk_code.go)
	codeSeed  uint64            // the rotation's seed (rotated codes)
	codeBits  int               // bits of a binary code: dim, or the rotation's padded dimension
	rot       *vecmath.Rotation // the rotation of rotated codes (nil: sign codes)
	codeParam int               // Params["code"]
	seedParam bool              // Params["codeseed"] is set
	bitsParam int               // Params["codebits"] (0: dim)

	segs  []*diskSeg
	n0    int     // rows in segments (= ids in the id table)
	ids   diskIDs // id table of ordinals [0, n0)
	scale []float32

	centroids []float32                 // nlist x dim (nil: no lists, or not trained yet)
	lists     []diskList                // the segment ordinals of each list
	packs     atomic.Pointer[diskPacks] // lists' codes in list order, packed on first probe

	tailVecs []float32        // rows n0.. in memory
	tailIDs  []string         // their ids
	tailSlot map[string]int32 // id -> ordinal of live tail rows

	tomb []uint64 // dead ordinals
	dead int

	seq, savedSeq uint64
	dirty         bool // rows or tombstones changed since the last write
	upgrade       bool // a version 1 index, to be written with its block checksums
	byList        bool // the next write puts each list's rows in consecutive ordinals (OrderLists)
	meta          diskMeta
	failed        error
	bgErr         error // a failed background write (CommitBackground), for Close
}

var (
	_ Index         = (*DiskIndex)(nil)
	_ BatchSearcher = (*DiskIndex)(nil)
	_ Durable       = (*DiskIndex)(nil)
	_ AllowSearcher = (*DiskIndex)(nil)
	_ FocusSearcher = (*DiskIndex)(nil)
	_ SearchPlanner = (*DiskIndex)(nil)
	_ VectorLookup  = (*DiskIndex)(nil)
	_ Verifier      = (*DiskIndex)(nil)

	_ BackgroundCommitter = (*DiskIndex)(nil)
)

// NewDiskIndex opens the disk index in cfg.Dir (empty when it holds none; in memory when
// cfg.Dir is ""). Params: "quant" (DiskQuant*), "code" (DiskCode*), "codeseed" (the
// rotation's seed), "codebits" (bits of a rotated code: dim, or dim padded to a power of
// two), "oversample", "prefilter" (DiskSearchOptions.Prefilter), "nlist" and "nprobe" (inverted
// lists), "probecut" (DiskSearchOptions.ProbeCut), "threads" (as the flat index), "segrows" (rows per segment file),
// "exactmb" (the float32 size in MiB up to which DiskQuantAuto searches exactly; default
// a quarter of physical memory). With cfg.Rows (and a Dir) it writes no float32 rows (see
// disk_rows.go; quant DiskQuantNone is then ErrBadConfig). Files that fail their checks
// give an error matching errDiskCorrupt, files of another configuration errDiskConfig,
// files whose rows are not where cfg says ErrRowSource.
func NewDiskIndex(cfg IndexConfig) (*DiskIndex, error) {
	if err := checkDimMetric(&cfg, "disk"); err != nil {
		return nil, err
	}
	p := cfg.Params
	x := &DiskIndex{dim: cfg.Dim, metric: cfg.Metric, dir: cfg.Dir, readOnly: cfg.ReadOnly,
		quant: p["quant"], oversample: p["oversample"], prefilter: p["prefilter"], probeCut: p["probecut"], threads: p["threads"], segRows: p["segrows"],
		nlist: p["nlist"], nprobe: p["nprobe"], tailSlot: map[string]int32{}, codeParam: p["code"], bitsParam: p["codebits"]}
	if cfg.Dir != "" {
		x.rows = cfg.Rows // in memory, every row stays in memory
	}
	if x.quant < DiskQuantAuto || x.quant > DiskQuantBinary || x.oversample < 0 || x.threads < 0 || x.segRows < 0 ||
		x.nlist < 0 || x.nlist > 1<<20 || x.nprobe < 0 || x.codeParam < DiskCodeAuto || x.codeParam > DiskCodeRotated || p["codeseed"] < 0 || x.bitsParam < 0 {
		return nil, fmt.Errorf("%w: disk: params %v", ErrBadConfig, p)
	}
	if x.segRows == 0 {
		x.segRows = diskSegRowsDefault
	}
	if x.rows != nil && x.quant == DiskQuantNone {
		return nil, fmt.Errorf("%w: disk: an index without rows of its own (IndexConfig.Rows) needs codes to scan (quant %d, %d or %d)", ErrBadConfig, DiskQuantAuto, DiskQuantInt8, DiskQuantBinary)
	}
	if x.quant == DiskQuantInt8 && x.dim > 4100 {
		return nil, fmt.Errorf("%w: disk: int8 codes of %d dimensions (at most 4100)", ErrBadConfig, x.dim)
	}
	x.nprobeSet = x.nprobe > 0
	if x.nprobe == 0 {
		x.nprobe = max(1, x.nlist/16)
	}
	seed, ok := p["codeseed"]
	x.seedParam = ok
	if !ok {
		seed = diskCodeSeedDefault
	}
	code, nbits := x.codeParam, x.bitsParam
	if code == DiskCodeAuto {
		// Rotated codes, every padded bit, for an index without rows of its own (the
		// measurements in disk_code.go); sign codes, as always, for the others.
		code = DiskCodeSigns
		if x.rows != nil || nbits > x.dim {
			code = DiskCodeRotated
			if nbits == 0 {
				nbits = 1 << bits.Len(uint(x.dim-1))
			}
		}
	}
	if !x.keepsBinary() {
		code, nbits = DiskCodeSigns, x.bitsParam // no binary codes: nothing to rotate
	}
	if err := x.setCode(code, uint64(seed), nbits); err != nil {
		return nil, err
	}
	if mb := p["exactmb"]; mb > 0 {
		x.budget = int64(mb) << 20
	} else if mem := diskMemBytes(); mem > 0 {
		x.budget = int64(mem / 4)
	} else {
		x.budget = 4 << 30
	}
	if x.dir != "" && !vecmath.LittleEndian {
		return nil, fmt.Errorf("%w: disk: its files are little-endian; this machine is not", ErrBadConfig)
	}
	if x.dir != "" {
		if err := x.load(); err != nil {
			x.unmapAll()
			return nil, err
		}
	}
	return x, nil
}

// codeWords is the number of uint64 words of a binary code.
func (x *DiskIndex) codeWords() int { return (x.codeBits + 63) / 64 }

// keepsBinary and keepsInt8 say which codes the segments hold.
func (x *DiskIndex) keepsBinary() bool { return x.quant == DiskQuantAuto || x.quant == DiskQuantBinary }
func (x *DiskIndex) keepsInt8() bool   { return x.quant == DiskQuantInt8 }

// n is the number of ordinals (live and dead).
func (x *DiskIndex) n() int { return x.n0 + len(x.tailIDs) }

func (x *DiskIndex) isDead(o int32) bool { return x.tomb[o>>6]&(1<<(uint(o)&63)) != 0 }

func (x *DiskIndex) setDead(o int32) {
	w, b := o>>6, uint64(1)<<(uint(o)&63)
	if x.tomb[w]&b == 0 {
		x.tomb[w] |= b
		x.dead++
	}
}

// idView is the id of ordinal o, viewing the mapped id table (valid under the lock).
func (x *DiskIndex) idView(o int32) string {
	if int(o) >= x.n0 {
		return x.tailIDs[int(o)-x.n0]
	}
	return x.ids.at(int(o))
}

// row is the float32 row of ordinal o.
func (x *DiskIndex) row(o int32) []float32 {
	d := x.dim
	if int(o) >= x.n0 {
		i := int(o) - x.n0
		return x.tailVecs[i*d : (i+1)*d : (i+1)*d]
	}
	s := x.segs[int(o)/x.segRows]
	i := int(o) % x.segRows
	return s.f32[i*d : (i+1)*d : (i+1)*d]
}

// lookup is the live ordinal of id.
func (x *DiskIndex) lookup(id string) (int32, bool) {
	if o, ok := x.tailSlot[id]; ok {
		return o, true
	}
	for _, o := range x.ids.find(id) {
		if !x.isDead(o) {
			return o, true
		}
	}
	return -1, false
}

// Add inserts or replaces the vectors of ids (a replaced row is tombstoned and the new one
// appended, or overwritten in place while it is still in memory). A bad batch changes
// nothing.
func (x *DiskIndex) Add(ctx context.Context, ids []string, vecs [][]float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkBatch(ids, vecs, x.dim); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return x.failed
	}
	d := x.dim
	x.reserveTail(len(ids))
	for i, id := range ids {
		o, ok := x.lookup(id)
		var dst []float32
		switch {
		case ok && int(o) >= x.n0:
			dst = x.row(o)
		default:
			if ok {
				x.setDead(o)
			}
			if x.n() >= math.MaxInt32-1 {
				return fmt.Errorf("%w: disk index is full", ErrBadBatch)
			}
			o = int32(x.n())
			x.tailIDs = append(x.tailIDs, strings.Clone(id))
			x.tailSlot[x.tailIDs[len(x.tailIDs)-1]] = o
			x.tailVecs = slices.Grow(x.tailVecs, d)[:len(x.tailVecs)+d]
			if w := int(o) >> 6; w >= len(x.tomb) {
				x.tomb = append(x.tomb, 0)
			}
			dst = x.row(o)
		}
		if x.metric == Cosine {
			vecmath.NormalizeInto(dst, vecs[i])
		} else {
			copy(dst, vecs[i])
		}
	}
	x.dirty = x.dirty || len(ids) > 0
	return nil
}

// reserveTail makes room for n more rows in memory, doubling the buffer (up to the rows a
// Commit writes out) rather than growing it a row at a time: at 1M rows the tail holds
// 125k rows (192 MB at 384 dimensions), and a row-at-a-time append copied and zeroed it
// again every 25 %.
func (x *DiskIndex) reserveTail(n int) {
	need := len(x.tailVecs) + n*x.dim
	if need <= cap(x.tailVecs) {
		return
	}
	want := max(need, min(2*cap(x.tailVecs), (x.flushRows()+n)*x.dim))
	x.tailVecs = slices.Grow(x.tailVecs, want-len(x.tailVecs))
}

// Delete tombstones ids (unknown ids are ignored).
func (x *DiskIndex) Delete(ctx context.Context, ids ...string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return x.failed
	}
	for _, id := range ids {
		o, ok := x.lookup(id)
		if !ok {
			continue
		}
		x.setDead(o)
		delete(x.tailSlot, id)
		x.dirty = true
	}
	if x.dir == "" && x.dead > 1024 && x.dead*4 > x.n() {
		x.compactMemoryLocked()
	}
	return nil
}

// compactMemoryLocked drops the dead rows of an index kept in memory.
func (x *DiskIndex) compactMemoryLocked() {
	d := x.dim
	vecs := make([]float32, 0, (x.n()-x.dead)*d)
	ids := make([]string, 0, x.n()-x.dead)
	for i, id := range x.tailIDs {
		if !x.isDead(int32(i)) {
			ids = append(ids, id)
			vecs = append(vecs, x.tailVecs[i*d:(i+1)*d]...)
		}
	}
	x.tailVecs, x.tailIDs, x.tailSlot = vecs, ids, make(map[string]int32, len(ids))
	for i, id := range ids {
		x.tailSlot[id] = int32(i)
	}
	x.tomb, x.dead = make([]uint64, (len(ids)+63)/64), 0
}

// Len is the number of live vectors.
func (x *DiskIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.n() - x.dead
}

// Seq is the store sequence number the index reflects (0: nothing).
func (x *DiskIndex) Seq() uint64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.seq
}

// Commit records seq; the rows buffered in memory are written (with the metadata naming
// seq) once there are diskFlushRows of them, else at Close.
func (x *DiskIndex) Commit(seq uint64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.failed != nil {
		return x.failed
	}
	x.seq = seq
	if x.dir == "" || x.readOnly || len(x.tailIDs) < x.flushRows() {
		return nil
	}
	return x.persistLocked()
}

// CommitBackground is Commit, with the rows written (when there are enough) on a goroutine
// that holds the index's lock until they are: it returns at once, and every other call
// waits for the write. A failed write leaves the index unusable (errDiskClosed, as a
// failed Commit does), the files at the previous commit; the next call and Close report
// it.
func (x *DiskIndex) CommitBackground(seq uint64) error {
	x.mu.Lock()
	if x.failed != nil {
		x.mu.Unlock()
		return x.failed
	}
	x.seq = seq
	if x.dir == "" || x.readOnly || len(x.tailIDs) < x.flushRows() {
		x.mu.Unlock()
		return nil
	}
	// The lock passes to the writer (a sync.RWMutex is not held by a goroutine): no call
	// sees the index between this commit and its write.
	go func() {
		defer x.mu.Unlock()
		defer func() {
			if p := recover(); p != nil {
				x.failed = fmt.Errorf("%w: writing the rows panicked: %v", errDiskClosed, p)
				x.bgErr = x.failed
			}
		}()
		if err := x.persistLocked(); err != nil {
			x.bgErr = x.failed
		}
	}()
	return nil
}

// flushRows is how many rows in memory make Commit write: diskFlushRows, or an eighth of
// the rows on disk up to 1 GiB of float32 rows (each write rewrites the id table, so a
// big index writes less often).
func (x *DiskIndex) flushRows() int {
	return max(diskFlushRows, min(x.n0/8, (1<<30)/(4*x.dim)))
}

// Close writes what changed (not in a read-only index) and releases the files; the index
// is empty afterwards.
func (x *DiskIndex) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	err := x.bgErr
	x.bgErr = nil
	if x.failed == nil && x.dir != "" && !x.readOnly && (x.dirty || x.seq != x.savedSeq || x.upgrade) {
		err = x.persistLocked()
	}
	x.unmapAll()
	x.segs, x.n0, x.ids, x.tailVecs, x.tailIDs, x.tailSlot = nil, 0, diskIDs{}, nil, nil, map[string]int32{}
	x.tomb, x.dead, x.dirty, x.lists, x.centroids = nil, 0, false, nil, nil
	x.dropPacks()
	return err
}

// unmapAll releases every mapping.
func (x *DiskIndex) unmapAll() {
	for _, s := range x.segs {
		s.unmap()
	}
	x.ids.unmap()
}

// Vector returns a copy of the stored (for Cosine: normalised) vector of id.
func (x *DiskIndex) Vector(id string) ([]float32, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	o, ok := x.lookup(id)
	if !ok {
		return nil, false
	}
	if x.rows != nil && int(o) < x.n0 {
		row := make([]float32, x.dim)
		if err := x.fetchRows(context.Background(), []int32{o}, [][]float32{row}); err != nil {
			slog.Warn("vectorstore: disk: cannot read a vector from the row source", "id", id, "err", err)
			return nil, false
		}
		return row, true
	}
	row, err := x.rowAt(o)
	if err != nil {
		// A damaged row is not the id's vector: the caller (the store's checks) sees it
		// missing and rebuilds the index.
		slog.Warn("vectorstore: disk: a stored vector is damaged", "id", id, "err", err)
		return nil, false
	}
	return slices.Clone(row), true
}

// Missing returns the ids of ids the index does not hold (a lookup in its id table each).
func (x *DiskIndex) Missing(ids []string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []string
	for _, id := range ids {
		if _, ok := x.lookup(id); !ok {
			out = append(out, id)
		}
	}
	return out
}

// prepQuery validates q and returns it as the index scores it (normalised for Cosine).
func (x *DiskIndex) prepQuery(q []float32, what string) ([]float32, error) {
	if err := checkVector(q, x.dim, what); err != nil {
		return nil, err
	}
	if x.metric == Cosine {
		nq := make([]float32, len(q))
		vecmath.NormalizeInto(nq, q)
		return nq, nil
	}
	return q, nil
}

// diskAccept says whether a search may return ordinal o (tombstones are checked apart).
type diskAccept struct {
	f     Filter
	allow *roaring.Bitmap
}

// Search returns the k vectors most similar to q among those f accepts, best first, with
// the index's choice of scan (see SearchPlan).
func (x *DiskIndex) Search(ctx context.Context, q []float32, k int, f Filter) ([]Hit, error) {
	return x.SearchWith(ctx, q, k, f, DiskSearchOptions{})
}

// SearchWith is Search with options (a forced scan, the oversampling factor).
func (x *DiskIndex) SearchWith(ctx context.Context, q []float32, k int, f Filter, o DiskSearchOptions) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q, err := x.prepQuery(q, "query")
	if err != nil || k <= 0 {
		return nil, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.searchLocked(ctx, q, k, diskAccept{f: f}, o, 0)
}

// SearchAllowed returns the k vectors most similar to q among the ids of allow: the ids are
// looked up once in the id table into a bitmap over the index's ordinals, and only those
// rows are scored (exactly). Unknown ids are ignored.
func (x *DiskIndex) SearchAllowed(ctx context.Context, q []float32, k int, allow []string) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q, err := x.prepQuery(q, "query")
	if err != nil || k <= 0 {
		return nil, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	bm := roaring.New()
	for _, id := range allow {
		if o, ok := x.lookup(id); ok {
			bm.Add(uint32(o))
		}
	}
	return x.searchLocked(ctx, q, k, diskAccept{allow: bm}, DiskSearchOptions{Mode: DiskExact}, 0)
}

// searchLocked answers one query (normalised) under the read lock; threads 0: the index's.
func (x *DiskIndex) searchLocked(ctx context.Context, q []float32, k int, acc diskAccept, o DiskSearchOptions, threads int) ([]Hit, error) {
	if x.failed != nil {
		return nil, x.failed
	}
	mode, os, err := x.choose(o)
	if err != nil || x.n()-x.dead == 0 {
		return nil, err
	}
	if mode != DiskExact {
		return x.searchCodes(ctx, q, k, acc, mode, os, threads, o)
	}
	h := x.newHeap(k)
	if x.rows != nil {
		if err := x.exactRowless(ctx, q, acc, &h); err != nil {
			return nil, err
		}
		return x.results(&h)
	}
	if acc.allow != nil {
		it := acc.allow.Iterator()
		var one [1]float32
		for i := 0; it.HasNext(); i++ {
			if i%(1<<14) == 0 {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
			ord := int32(it.Next())
			if x.isDead(ord) {
				continue
			}
			row, err := x.rowAt(ord)
			if err != nil {
				return nil, err
			}
			flatDots(q, row, one[:])
			h.Offer(one[0], ord)
		}
		return x.results(&h)
	}
	var first diskFirstScan
	if acc.f == nil && diskFusable(x.dim) {
		first = func(st any, base int32, rows []float32, cnt int, s *diskSeg, lo int) error {
			return x.scanExactFirst(q, base, rows, cnt, s, lo, st.(*flatHeap))
		}
	}
	err = x.parallelBlocks(ctx, threads, func() any { hh := x.newHeap(k); return &hh }, func(st any, base int32, rows []float32, cnt int) {
		x.scanExact(q, base, rows, cnt, acc.f, st.(*flatHeap))
	}, first, func(st any) { h.Merge(st.(*flatHeap)) })
	if err != nil {
		return nil, err
	}
	return x.results(&h)
}

// choose is the scan of a search and its oversampling.
func (x *DiskIndex) choose(o DiskSearchOptions) (DiskMode, int, error) {
	mode := o.Mode
	if mode == DiskModeDefault {
		mode = x.defaultMode()
	}
	switch {
	case mode == DiskInt8 && !x.keepsInt8(), mode == DiskBinary && !x.keepsBinary():
		return 0, 0, fmt.Errorf("%w: disk: a %s search needs %s codes (the index keeps quant %d)", ErrBadConfig, mode, mode, x.quant)
	case mode < DiskModeDefault || mode > DiskBinary:
		return 0, 0, fmt.Errorf("%w: disk: search mode %d", ErrBadConfig, mode)
	}
	if x.n0 == 0 {
		mode = DiskExact // every row is in memory: nothing to gain from codes
	}
	os := o.Oversample
	if os <= 0 {
		os = x.oversample
	}
	if os <= 0 {
		switch {
		case mode == DiskInt8:
			os = diskOversampleInt8
		case x.rows != nil && x.rot != nil:
			os = diskOversampleRowless
		default:
			os = diskOversampleBinary
		}
	}
	return mode, os, nil
}

// defaultMode is the scan a search uses when not told.
func (x *DiskIndex) defaultMode() DiskMode {
	if x.rows != nil { // no float32 rows to scan: codes, then rescoring, always
		if x.quant == DiskQuantInt8 {
			return DiskInt8
		}
		return DiskBinary
	}
	switch x.quant {
	case DiskQuantInt8:
		return DiskInt8
	case DiskQuantBinary:
		return DiskBinary
	case DiskQuantAuto:
		if int64(x.n())*int64(x.dim)*4 > x.budget {
			return DiskBinary
		}
	}
	return DiskExact
}

// SearchPlan says in a sentence how a search with default options is answered and why
// (for Explain.Notes), and whether that scan is approximate (codes, then rescoring).
func (x *DiskIndex) SearchPlan() (string, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	mode, os, err := x.choose(DiskSearchOptions{})
	if err != nil {
		return err.Error(), false
	}
	return x.plan(mode, os), mode != DiskExact
}

// plan is SearchPlan's sentence.
func (x *DiskIndex) plan(mode DiskMode, os int) string {
	n, bytes := x.n()-x.dead, int64(x.n())*int64(x.dim)*4
	switch {
	case mode == DiskExact && x.quant == DiskQuantAuto:
		return fmt.Sprintf("dense: exact float32 scan of %d vectors (%d MiB, within the %d MiB kept for exact search)", n, bytes>>20, x.budget>>20)
	case mode == DiskExact && x.rows != nil:
		return fmt.Sprintf("dense: exact scan of %d vectors, read from the store of record", n)
	case mode == DiskExact:
		return fmt.Sprintf("dense: exact float32 scan of %d vectors", n)
	}
	codes := mode.String()
	if mode == DiskBinary && x.rot != nil {
		codes = "rotated binary" // the signs of a seeded random rotation (disk_code.go)
	}
	lists := ""
	if x.lists != nil {
		np, cut := x.probeParams(DiskSearchOptions{})
		n := min(np, x.nlist)
		lists = fmt.Sprintf(" in the %d of %d inverted lists nearest the query", n, x.nlist)
		if x.cuts(n, cut) {
			lists = fmt.Sprintf(" in the %d of %d inverted lists nearest the query, or the %d nearest where those stand apart from the rest,",
				n, x.nlist, n/diskProbeFloor)
		}
	}
	if pf := cmp.Or(x.prefilter, diskPrefilterDefault); mode == DiskBinary && pf > 0 {
		lists += fmt.Sprintf(" (those within the Hamming distance that keeps %dx the candidates scored)", pf)
	}
	if x.rows != nil {
		prec := ""
		if rp, ok := x.rows.(RowPrecision); ok {
			prec = rp.Precision() + " "
		}
		return fmt.Sprintf("dense: %s codes of %d vectors%s, the best %dx k rescored with the %svectors of the store of record", codes, n, lists, os, prec)
	}
	if x.quant == DiskQuantAuto {
		return fmt.Sprintf("dense: %s codes of %d vectors%s, the best %dx k rescored with float32 rows (%d MiB of float32 rows exceed the %d MiB kept for exact search)", codes, n, lists, os, bytes>>20, x.budget>>20)
	}
	return fmt.Sprintf("dense: %s codes of %d vectors%s, the best %dx k rescored with float32 rows", codes, n, lists, os)
}

// newHeap is a heap of ordinals whose ties rank by id.
func (x *DiskIndex) newHeap(k int) flatHeap {
	return topk.New(k, func(a, b int32) bool { return x.idView(a) < x.idView(b) })
}

// results turns a heap of ordinals into hits, best first. A score that is not finite is
// never a result: it comes from a row that is not (damaged files: errDiskCorrupt) or from
// finite values whose product overflows float32 (ErrNonFinite).
func (x *DiskIndex) results(h *flatHeap) ([]Hit, error) {
	items := h.Sorted()
	out := make([]Hit, len(items))
	for i, it := range items {
		id := x.idView(it.Value)
		if s := float64(it.Score); math.IsNaN(s) || math.IsInf(s, 0) {
			if x.rows != nil && int(it.Value) < x.n0 {
				return nil, fmt.Errorf("%w: the score of %q is %v (its vector from the row source is not finite, or the product overflows)", ErrNonFinite, id, s)
			}
			if err := vecmath.Check(x.row(it.Value), x.dim); err != nil {
				return nil, x.corrupt("the row of %q: %v", id, err)
			}
			return nil, fmt.Errorf("%w: the score of %q is %v (out of float32's range)", ErrNonFinite, id, s)
		}
		out[i] = Hit{ID: strings.Clone(id), Score: float64(it.Score)}
	}
	return out, nil
}

// scanExact offers the cnt rows of rows (ordinals base..) that are live and accepted by f.
func (x *DiskIndex) scanExact(q []float32, base int32, rows []float32, cnt int, f Filter, h *flatHeap) {
	d := x.dim
	var buf [flatBlock]float32
	for b := 0; b < cnt; b += flatBlock {
		e := min(b+flatBlock, cnt)
		if f == nil {
			out := buf[:e-b]
			flatDots(q, rows[b*d:e*d], out)
			for i, s := range out {
				if o := base + int32(b+i); !x.isDead(o) {
					h.Offer(s, o)
				}
			}
			continue
		}
		var one [1]float32
		for i := b; i < e; i++ {
			o := base + int32(i)
			if x.isDead(o) || !f(x.idView(o)) {
				continue
			}
			flatDots(q, rows[i*d:(i+1)*d], one[:])
			h.Offer(one[0], o)
		}
	}
}

// scanExactFirst is scanExact without a filter over rows of segment s (from its row lo on,
// lo a multiple of flatBlock) that a search reads for the first time: the kernel checks
// their blocks as it scores them, flatBlock rows at a time, and offers their scores only
// once every block of them has matched its checksum.
func (x *DiskIndex) scanExactFirst(q []float32, base int32, rows []float32, cnt int, s *diskSeg, lo int, h *flatHeap) error {
	d, rb := x.dim, 4*x.dim
	sums, size := s.meta.F32.sums, len(s.maps[diskF32])
	var buf [flatBlock]float32
	lanes := make([]diskLanes, diskBlocks(int64(min(flatBlock, cnt)*rb)))
	for b := 0; b < cnt; b += flatBlock {
		e := min(b+flatBlock, cnt)
		out, start, end := buf[:e-b], (lo+b)*rb, (lo+e)*rb
		if x.checked(s, diskF32, start, end) {
			flatDots(q, rows[b*d:e*d], out)
		} else {
			diskDotsSum(q, rows[b*d:e*d], out, lanes)
			for i, blk := 0, start>>diskBlockShift; blk < diskBlocks(int64(end)); i, blk = i+1, blk+1 {
				if diskFold(&lanes[i], min(diskBlock, size-blk<<diskBlockShift)) != sums[blk] {
					return x.blockCorrupt(&s.meta.F32, blk, size)
				}
				s.ok[diskF32][blk>>6].Or(1 << (blk & 63))
			}
		}
		for i, sc := range out {
			if o := base + int32(b+i); !x.isDead(o) {
				h.Offer(sc, o)
			}
		}
	}
	return nil
}

// diskFirstScan scans rows of segment s (its rows lo..) read for the first time,
// checking their blocks as it reads them (nil: parallelBlocks checks them, then scans).
type diskFirstScan func(st any, base int32, rows []float32, cnt int, s *diskSeg, lo int) error

// diskChunkRows is how many rows a parallel scan hands a worker at a time.
const diskChunkRows = 16 * flatBlock

// diskCheckPiece is how many bytes of rows a scan checks, then scores, at a time when it
// reads them first (well within a core's L2 cache).
const diskCheckPiece = 128 << 10

// parallelBlocks runs scan over every run of rows (at most diskChunkRows, within one
// segment or the memory tail) on threads workers (0: the index's setting), each with its
// own state from newState, merged by merge on the calling goroutine.
func (x *DiskIndex) parallelBlocks(ctx context.Context, threads int, newState func() any,
	scan func(st any, base int32, rows []float32, cnt int), first diskFirstScan, merge func(st any)) error {
	type run struct {
		base int32
		rows []float32
		cnt  int
		seg  *diskSeg // its rows' blocks are checked first (nil: the rows in memory)
		lo   int      // the first row's place in seg
	}
	var runs []run
	d := x.dim
	add := func(base int, rows []float32, cnt int, seg *diskSeg) {
		for lo := 0; lo < cnt; lo += diskChunkRows {
			hi := min(lo+diskChunkRows, cnt)
			runs = append(runs, run{int32(base + lo), rows[lo*d : hi*d], hi - lo, seg, lo})
		}
	}
	for i, s := range x.segs {
		add(i*x.segRows, s.f32, s.rows, s)
	}
	add(x.n0, x.tailVecs, len(x.tailIDs), nil)
	workers := threads
	if workers == 0 {
		workers = x.threads
	}
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
		if x.n()*d < flatParallelMin {
			workers = 1
		}
	}
	workers = max(1, min(workers, len(runs)))
	sub := max(1, diskCheckPiece/(4*d)) // rows checked, then scanned, at a time
	states := make([]any, workers)
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		states[w] = newState()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(runs) {
					return
				}
				if i%16 == 0 {
					if err := ctx.Err(); err != nil {
						errs[w] = err
						return
					}
				}
				r := runs[i]
				if r.seg == nil || x.checked(r.seg, diskF32, 4*d*r.lo, 4*d*(r.lo+r.cnt)) {
					scan(states[w], r.base, r.rows, r.cnt)
					continue
				}
				if first != nil {
					if err := first(states[w], r.base, r.rows, r.cnt, r.seg, r.lo); err != nil {
						errs[w] = err
						return
					}
					continue
				}
				// The first read of these rows: a piece at a time, each checked just before
				// it is scanned (read from memory once, then scanned from the cache).
				for lo := 0; lo < r.cnt; lo += sub {
					hi := min(lo+sub, r.cnt)
					if err := x.checkRange(r.seg, diskF32, 4*d*(r.lo+lo), 4*d*(r.lo+hi)); err != nil {
						errs[w] = err
						return
					}
					scan(states[w], r.base+int32(lo), r.rows[lo*d:hi*d], hi-lo)
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, st := range states {
		merge(st)
	}
	return nil
}

// searchCodes scans the codes of the segments for the best k*os candidates, rescores them
// with their float32 rows, and scores the rows still in memory exactly.
func (x *DiskIndex) searchCodes(ctx context.Context, q []float32, k int, acc diskAccept, mode DiskMode, os, threads int, o DiskSearchOptions) ([]Hit, error) {
	workers := threads
	if workers == 0 {
		workers = cmp.Or(x.threads, runtime.GOMAXPROCS(0))
	}
	cq := x.prepCodes(q, k, acc, mode, os, o)
	units := len(cq.runs) + len(cq.probed)
	workers = max(1, min(workers, units))
	if cq.qcode != nil {
		var err error
		if cq.hcut, err = x.hammingCut(ctx, cq.qcode, cq.runs, cq.probed, cq.rows, cq.keep, workers); err != nil {
			return nil, err
		}
	}
	heaps := make([]topk.Heap[int32], workers)
	for w := range heaps {
		heaps[w] = cq.newHeap()
	}
	if err := diskEach(ctx, workers, units, func(w, i int) error {
		if i < len(cq.runs) {
			return x.scanRun(cq, cq.runs[i], &heaps[w])
		}
		return x.scanList(cq, cq.probed[i-len(cq.runs)], &heaps[w])
	}); err != nil {
		return nil, err
	}
	cand := cq.newHeap()
	for i := range heaps {
		cand.Merge(&heaps[i])
	}
	return x.finishCodes(ctx, cq, k, &cand)
}

// codeQuery is one query of a scan of codes (searchCodes): what it scores the codes with,
// what it scans, and its prefilter's cut.
type codeQuery struct {
	q      []float32
	acc    diskAccept
	mode   DiskMode
	c      int       // candidates kept for rescoring
	lut    []float32 // binary: the nibble tables of what the codes are the signs of
	qi     []int16   // int8: the query's int8 form
	qcode  []uint64  // with a prefilter: the query's own code
	hcut   int       // with a prefilter: the largest Hamming distance of a row scored (else -1)
	keep   int       // with a prefilter: the rows its cut is to keep (hammingCut)
	rows   int       // with a prefilter: the rows the scan holds
	runs   []codeRun // without inverted lists: the chunks of every segment
	probed []int32   // with inverted lists: the lists probed
}

// diskCandBefore orders candidates of equal scores (by ordinal, so that any split of a
// scan into parts keeps the same ones).
func diskCandBefore(a, b int32) bool { return a < b }

// newHeap is a heap of cq's candidates.
func (cq *codeQuery) newHeap() topk.Heap[int32] { return topk.New(cq.c, diskCandBefore) }

// prepCodes prepares q's scan of codes: its tables, the lists it probes (or the runs of
// every segment) and, for a binary scan without a filter with more rows than the
// prefilter keeps, the query's code (qcode), what the prefilter's cut is to keep, and of
// how many rows (the caller finds the cut: hammingCut, or a batch's list by list).
func (x *DiskIndex) prepCodes(q []float32, k int, acc diskAccept, mode DiskMode, os int, o DiskSearchOptions) *codeQuery {
	cq := &codeQuery{q: q, acc: acc, mode: mode, c: k * os, hcut: -1}
	if o.Focus > 0 && o.Focus < k {
		cq.c = max(k, o.Focus*os) // candidates for the first Focus results (SearchFocus)
	}
	var bv []float32
	if mode == DiskBinary {
		bv = x.binaryView(q)
		cq.lut = binaryLUT(bv, nil)
	} else {
		cq.qi = int8Query(q, x.scale)
	}
	if x.lists != nil {
		cq.probed = x.probeWith(q, o)
	} else {
		for i, s := range x.segs {
			for lo := 0; lo < s.rows; lo += diskChunkRows {
				cq.runs = append(cq.runs, codeRun{s, int32(i * x.segRows), lo, min(lo+diskChunkRows, s.rows)})
			}
		}
	}
	units := len(cq.runs) + len(cq.probed)
	if mode != DiskBinary || units == 0 || acc.f != nil || acc.allow != nil {
		return cq
	}
	pf := cmp.Or(o.Prefilter, x.prefilter, diskPrefilterDefault)
	rows := 0
	for _, r := range cq.runs {
		rows += r.hi - r.lo
	}
	for _, c := range cq.probed {
		rows += x.lists[c].len()
	}
	if pf > 0 && int64(cq.c)*int64(pf) < int64(rows)/2 {
		cq.qcode = make([]uint64, x.codeWords())
		binaryCode(bv, cq.qcode) // the query's own code, as the rows' are made
		cq.keep, cq.rows = cq.c*pf, rows
	}
	return cq
}

// accept reports whether cq's scan may offer ordinal o: live, and accepted by its filter.
func (x *DiskIndex) accept(cq *codeQuery, o int32) bool {
	if x.isDead(o) {
		return false
	}
	switch {
	case cq.acc.allow != nil:
		return cq.acc.allow.Contains(uint32(o))
	case cq.acc.f != nil:
		return cq.acc.f(x.idView(o))
	}
	return true
}

// scanCodes offers to h n rows whose codes are b1 (binary: codeWords() words a row) or i8
// (int8: dim a row), each scored as cq scores codes, the ones past the prefilter's cut
// skipped; row r's ordinal is ords[r] (ords nil: base+r).
func (x *DiskIndex) scanCodes(cq *codeQuery, n int, ords []int32, base int32, b1 []uint64, i8 []int8, h *topk.Heap[int32]) {
	W, d := x.codeWords(), x.dim
	if cq.mode == DiskBinary && cq.hcut >= 0 {
		// The cut first, a block of rows at a time (hammingFilter), then the few rows
		// within it scored.
		var pass [hammingFilterRows]int32
		for lo := 0; lo < n; lo += len(pass) {
			hi := min(lo+len(pass), n)
			m := hammingFilter(cq.qcode, b1[lo*W:hi*W:hi*W], cq.hcut, pass[:])
			for _, r := range pass[:m] {
				j := lo + int(r)
				o := base + int32(j)
				if ords != nil {
					o = ords[j]
				}
				sc := binaryScore(cq.lut, b1[j*W:(j+1)*W:(j+1)*W])
				if h.Full() && sc < h.Min() {
					continue
				}
				if x.accept(cq, o) {
					h.Offer(sc, o)
				}
			}
		}
		return
	}
	for r := range n {
		o := base + int32(r)
		if ords != nil {
			o = ords[r]
		}
		var sc float32
		if cq.mode == DiskBinary {
			sc = binaryScore(cq.lut, b1[r*W:(r+1)*W:(r+1)*W])
		} else {
			sc = float32(dotInt8Q(cq.qi, i8[r*d:(r+1)*d:(r+1)*d]))
		}
		if h.Full() && sc < h.Min() {
			continue
		}
		if x.accept(cq, o) {
			h.Offer(sc, o)
		}
	}
}

// scanRun scans run r of a segment's codes (checked first) for cq into h.
func (x *DiskIndex) scanRun(cq *codeQuery, r codeRun, h *topk.Heap[int32]) error {
	W, d := x.codeWords(), x.dim
	if cq.mode == DiskBinary {
		if err := x.checkRange(r.seg, diskB1, r.lo*8*W, r.hi*8*W); err != nil {
			return err
		}
	} else if err := x.checkRange(r.seg, diskI8, r.lo*d, r.hi*d); err != nil {
		return err
	}
	var b1 []uint64
	var i8 []int8
	if cq.mode == DiskBinary {
		b1 = r.seg.b1[r.lo*W : r.hi*W]
	} else {
		i8 = r.seg.i8[r.lo*d : r.hi*d]
	}
	x.scanCodes(cq, r.hi-r.lo, nil, r.base+int32(r.lo), b1, i8, h)
	return nil
}

// scanList scans inverted list c for cq into h: from its packed codes (diskPack), or else
// row by row from the segments, each row's code bytes checked first.
func (x *DiskIndex) scanList(cq *codeQuery, c int32, h *topk.Heap[int32]) error {
	p, err := x.pack(c, cq.mode)
	if err != nil {
		return err
	}
	if p != nil {
		for _, pc := range p.pieces {
			x.scanCodes(cq, pc.n, pc.ords, pc.base, pc.b1, pc.i8, h)
		}
		return nil
	}
	W, d := x.codeWords(), x.dim
	codeFile := diskI8
	if cq.mode == DiskBinary {
		codeFile = diskB1
	}
	for o := range x.lists[c].all() {
		s, j := x.segs[int(o)/x.segRows], int(o)%x.segRows
		if err := x.codeAt(s, codeFile, j); err != nil {
			return err
		}
		if cq.mode == DiskBinary {
			x.scanCodes(cq, 1, nil, o, s.b1[j*W:(j+1)*W], nil, h)
		} else {
			x.scanCodes(cq, 1, nil, o, nil, s.i8[j*d:(j+1)*d], h)
		}
	}
	return nil
}

// finishCodes rescores cq's candidates (cand) with their rows and scores the rows still
// in memory exactly: the best k.
func (x *DiskIndex) finishCodes(ctx context.Context, cq *codeQuery, k int, cand *topk.Heap[int32]) ([]Hit, error) {
	final := x.newHeap(k)
	if err := x.scoreOrdinals(ctx, cq.q, candOrdinals(cand), &final); err != nil {
		return nil, err
	}
	return x.finishTail(cq, &final)
}

// candOrdinals empties cand and returns its ordinals, best first.
func candOrdinals(cand *topk.Heap[int32]) []int32 {
	items := cand.Sorted()
	ords := make([]int32, len(items))
	for i, it := range items {
		ords[i] = it.Value
	}
	return ords
}

// finishTail offers final, which holds cq's rescored candidates, the rows in memory that
// cq accepts (no codes of their own: each is scored exactly), and returns its hits.
func (x *DiskIndex) finishTail(cq *codeQuery, final *flatHeap) ([]Hit, error) {
	if t := len(x.tailIDs); t > 0 {
		if cq.acc.allow != nil {
			var one [1]float32
			for i := range t {
				o := int32(x.n0 + i)
				if x.accept(cq, o) {
					flatDots(cq.q, x.row(o), one[:])
					final.Offer(one[0], o)
				}
			}
		} else {
			x.scanExact(cq.q, int32(x.n0), x.tailVecs, t, cq.acc.f, final)
		}
	}
	return x.results(final)
}

// diskBatchBlock is how many rows of a list a batch scans for every query probing it
// before the next rows (searchCodesBatch): 48 KiB of 768-bit codes, in the core's cache.
var diskBatchBlock = 512 // (a variable for tests)

// searchCodesBatch answers qs (normalised) with scans of codes over inverted lists, list
// by list: the queries probing a list scan it a block of rows at a time (diskBatchBlock),
// so each list's codes are read from memory once a batch instead of once a query. Each
// result is searchCodes'. Preparing (probes, prefilter cuts) runs a query per goroutine;
// rescoring too for an index with rows of its own, while one that reads its rows from a
// RowSource reads the batch's candidates once for the batch, in key order (rescoreBatch).
func (x *DiskIndex) searchCodesBatch(ctx context.Context, qs [][]float32, k int, f Filter, mode DiskMode, os int, o DiskSearchOptions, out [][]Hit) error {
	workers := max(1, cmp.Or(x.threads, runtime.GOMAXPROCS(0)))
	cqs := make([]*codeQuery, len(qs))
	if err := diskEach(ctx, workers, len(qs), func(_, i int) error {
		cqs[i] = x.prepCodes(qs[i], k, diskAccept{f: f}, mode, os, o)
		return nil
	}); err != nil {
		return err
	}
	byList := make([][]int32, x.nlist)
	for i, cq := range cqs {
		for _, c := range cq.probed {
			byList[c] = append(byList[c], int32(i))
		}
	}
	var work []int32 // the lists probed by any query
	for c, l := range byList {
		if len(l) > 0 {
			work = append(work, int32(c))
		}
	}
	// The prefilters' cuts, list by list: each query's distances counted per worker
	// (hammingCut's sample, lists read once for the batch), then each query's cut.
	hists := make([][][]int, workers) // a worker's, by query
	if err := diskEach(ctx, workers, len(work), func(w, i int) error {
		if hists[w] == nil {
			hists[w] = make([][]int, len(qs))
		}
		c := work[i]
		for _, qi := range byList[c] {
			cq := cqs[qi]
			if cq.qcode == nil {
				continue
			}
			if hists[w][qi] == nil {
				hists[w][qi] = make([]int, 64*x.codeWords()+1)
			}
			if err := x.sampleList(c, cq.qcode, hists[w][qi]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for qi, cq := range cqs {
		if cq.qcode == nil {
			continue
		}
		var hs [][]int
		for w := range hists {
			if hists[w] != nil && hists[w][qi] != nil {
				hs = append(hs, hists[w][qi])
			}
		}
		cq.hcut = hammingCutOf(hs, cq.keep, cq.rows, 64*x.codeWords())
	}
	hists = nil
	heaps := make([][]topk.Heap[int32], workers) // a worker's, by query (allocated when first offered to)
	if err := diskEach(ctx, workers, len(work), func(w, i int) error {
		if heaps[w] == nil {
			heaps[w] = make([]topk.Heap[int32], len(qs))
		}
		hw := heaps[w]
		c := work[i]
		for _, qi := range byList[c] {
			if hw[qi].K() == 0 {
				hw[qi] = cqs[qi].newHeap()
			}
		}
		p, err := x.pack(c, mode)
		if err != nil {
			return err
		}
		if p == nil { // not packed: row by row, a query at a time
			for _, qi := range byList[c] {
				if err := x.scanList(cqs[qi], c, &hw[qi]); err != nil {
					return err
				}
			}
			return nil
		}
		W, d := x.codeWords(), x.dim
		for _, pc := range p.pieces {
			for lo := 0; lo < pc.n; lo += diskBatchBlock {
				hi := min(lo+diskBatchBlock, pc.n)
				var b1 []uint64
				var i8 []int8
				if mode == DiskBinary {
					b1 = pc.b1[lo*W : hi*W]
				} else {
					i8 = pc.i8[lo*d : hi*d]
				}
				ords := pc.ords
				if ords != nil {
					ords = ords[lo:hi]
				}
				for _, qi := range byList[c] {
					x.scanCodes(cqs[qi], hi-lo, ords, pc.base+int32(lo), b1, i8, &hw[qi])
				}
			}
		}
		return nil
	}); err != nil {
		return err
	}
	merged := func(i int) *topk.Heap[int32] {
		cand := cqs[i].newHeap()
		for w := range heaps {
			if heaps[w] != nil && heaps[w][i].K() > 0 {
				cand.Merge(&heaps[w][i])
			}
		}
		return &cand
	}
	if x.rows == nil { // rows of its own: each query rescores its candidates
		return diskEach(ctx, workers, len(qs), func(_, i int) error {
			var err error
			out[i], err = x.finishCodes(ctx, cqs[i], k, merged(i))
			return err
		})
	}
	cands := make([][]int32, len(qs))
	if err := diskEach(ctx, workers, len(qs), func(_, i int) error {
		cands[i] = candOrdinals(merged(i))
		return nil
	}); err != nil {
		return err
	}
	heaps = nil
	finals, err := x.rescoreBatch(ctx, workers, k, cqs, cands)
	if err != nil {
		return err
	}
	return diskEach(ctx, workers, len(qs), func(_, i int) error {
		var err error
		out[i], err = x.finishTail(cqs[i], &finals[i])
		return err
	})
}

// diskEach calls fn(w, i) for i in [0, n) on workers goroutines (w: the goroutine's
// number), stopping at the first error or when ctx is done.
func diskEach(ctx context.Context, workers, n int, fn func(w, i int) error) error {
	workers = max(1, min(workers, n))
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if errs[w] = ctx.Err(); errs[w] != nil {
					return
				}
				if errs[w] = fn(w, i); errs[w] != nil {
					next.Store(int64(n)) // the others stop at their next item
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// binaryCode sets the bits of v's positive components in out.
func binaryCode(v []float32, out []uint64) {
	clear(out)
	for j, f := range v {
		// f > 0 without a branch (half the signs are each way, so a branch mispredicts
		// half the time): the sign bit clear and some other bit set. Finite values only.
		b := math.Float32bits(f)
		pos := (uint64(b&0x7fffffff) + 0x7fffffff) >> 31 & uint64(^b>>31)
		out[j>>6] |= pos << (uint(j) & 63)
	}
}

// binaryLUT returns q's nibble tables for binaryScore (reusing out's room): for each 4
// bits of a code (nibble i: dimensions 4i to 4i+3) and each of their 16 values v, the sum
// over those dimensions j of +q_j where v has the bit of j and -q_j where not. A row's
// score is then the dot product of q with the row's signs (an asymmetric estimate: the
// query keeps its float32 values, which ranks far better than the Hamming distance
// between two sign codes), in one lookup a nibble. A nibble's 16 values are 64 bytes and
// a query's tables 16 KiB at 1,024 bits, within a core's first-level cache; byte tables
// (256 values a byte, 128 KiB) took half the lookups, but a batch, which scores the rows
// of a list for query after query, holds a query's tables at a time beside rows and
// pages: at 10M x 768, 2,560 queries at the defaults, the scoring took 16 % of the CPU
// with byte tables and 10 % with these, and the batch 0.3 GB less heap (BENCHMARKS §0zz6).
func binaryLUT(q []float32, out []float32) []float32 {
	nn := 16 * ((len(q) + 63) / 64) // every nibble of the code's words (past the last dimension: 0)
	out = slices.Grow(out[:0], nn*16)[:nn*16]
	for b := range nn {
		t := out[b*16 : (b+1)*16 : (b+1)*16]
		var base float32
		var q4 [4]float32
		for i := range 4 {
			if j := b*4 + i; j < len(q) {
				q4[i] = q[j]
				base -= q[j]
			}
		}
		t[0] = base
		for v := 1; v < 16; v++ {
			low := bits.TrailingZeros8(uint8(v))
			t[v] = t[v&(v-1)] + 2*q4[low]
		}
	}
	return out
}

// binaryScore is the score of a binary code under a query's nibble tables (binaryLUT).
func binaryScore(lut []float32, code []uint64) float32 {
	var a0, a1, a2, a3 float32
	for w, c := range code {
		t := (*[256]float32)(lut[w*256 : (w+1)*256])
		a0 += t[c&15] + t[16+c>>4&15] + t[32+c>>8&15] + t[48+c>>12&15]
		a1 += t[64+c>>16&15] + t[80+c>>20&15] + t[96+c>>24&15] + t[112+c>>28&15]
		a2 += t[128+c>>32&15] + t[144+c>>36&15] + t[160+c>>40&15] + t[176+c>>44&15]
		a3 += t[192+c>>48&15] + t[208+c>>52&15] + t[224+c>>56&15] + t[240+c>>60]
	}
	return (a0 + a1) + (a2 + a3)
}

// int8Code quantises v with the per-dimension scale.
func int8Code(v, scale []float32, out []int8) {
	for j, f := range v {
		c := math.Round(float64(f / scale[j]))
		out[j] = int8(max(-127, min(127, c)))
	}
}

// diskQueryQuant is the largest magnitude of an integer query value: d x 4095 x 127 stays
// within int32 for d up to 4,100 dimensions (NewDiskIndex refuses int8 codes beyond).
const diskQueryQuant = 4095

// int8Query is the query scaled per dimension (q_j x scale_j, so that its dot product with
// a code approximates the float32 one) and rounded to integers of at most diskQueryQuant:
// the int8 scan ranks candidates by an integer dot product (their final scores are exact).
func int8Query(q, scale []float32) []int16 {
	qs := make([]float32, len(q))
	var m float32
	for j := range q {
		qs[j] = q[j] * scale[j]
		m = max(m, float32(math.Abs(float64(qs[j]))))
	}
	out := make([]int16, len(q))
	if m == 0 {
		return out
	}
	for j, v := range qs {
		out[j] = int16(math.Round(float64(v / m * diskQueryQuant)))
	}
	return out
}

// dotInt8QGeneric is the portable dotInt8Q.
func dotInt8QGeneric(qi []int16, c []int8) int32 {
	c = c[:len(qi)]
	var a0, a1, a2, a3 int32
	j := 0
	for ; j+4 <= len(qi); j += 4 {
		a0 += int32(qi[j]) * int32(c[j])
		a1 += int32(qi[j+1]) * int32(c[j+1])
		a2 += int32(qi[j+2]) * int32(c[j+2])
		a3 += int32(qi[j+3]) * int32(c[j+3])
	}
	for ; j < len(qi); j++ {
		a0 += int32(qi[j]) * int32(c[j])
	}
	return (a0 + a1) + (a2 + a3)
}

// SearchBatch answers many queries: exact searches in one pass over the rows (a block of
// rows stays in cache while every query is scored against it, as flatIndex.SearchBatch),
// each result equal to Search's; quantized searches over inverted lists list by list (the
// queries probing a list scan it together, a block of its rows at a time), other
// quantized searches one query per goroutine.
func (x *DiskIndex) SearchBatch(ctx context.Context, qs [][]float32, k int, f Filter) ([][]Hit, error) {
	return x.SearchBatchWith(ctx, qs, k, f, DiskSearchOptions{})
}

// SearchFocus is SearchWith with DiskSearchOptions.Focus set to focus (FocusSearcher).
func (x *DiskIndex) SearchFocus(ctx context.Context, q []float32, k, focus int, f Filter) ([]Hit, error) {
	return x.SearchWith(ctx, q, k, f, DiskSearchOptions{Focus: focus})
}

// SearchBatchFocus is SearchBatchWith with DiskSearchOptions.Focus set to focus.
func (x *DiskIndex) SearchBatchFocus(ctx context.Context, qs [][]float32, k, focus int, f Filter) ([][]Hit, error) {
	return x.SearchBatchWith(ctx, qs, k, f, DiskSearchOptions{Focus: focus})
}

// SearchBatchWith is SearchBatch with options.
func (x *DiskIndex) SearchBatchWith(ctx context.Context, qs [][]float32, k int, f Filter, o DiskSearchOptions) ([][]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nqs := make([][]float32, len(qs))
	for i, q := range qs {
		var err error
		if nqs[i], err = x.prepQuery(q, fmt.Sprintf("query %d", i)); err != nil {
			return nil, err
		}
	}
	out := make([][]Hit, len(qs))
	if k <= 0 || len(qs) == 0 {
		return out, nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.failed != nil {
		return nil, x.failed
	}
	mode, os, err := x.choose(o)
	if err != nil {
		return nil, err
	}
	if x.n()-x.dead == 0 {
		return out, nil
	}
	if mode != DiskExact && x.lists != nil && len(nqs) > 1 {
		if err := x.searchCodesBatch(ctx, nqs, k, f, mode, os, o, out); err != nil {
			return nil, err
		}
		return out, nil
	}
	if mode != DiskExact || x.rows != nil {
		if err := diskEach(ctx, cmp.Or(x.threads, runtime.GOMAXPROCS(0)), len(nqs), func(_, i int) error {
			var err error
			out[i], err = x.searchLocked(ctx, nqs[i], k, diskAccept{f: f}, o, 1)
			return err
		}); err != nil {
			return nil, err
		}
		return out, nil
	}
	k = min(k, x.n())
	per := max(3, flatBatchMaxItems/k/3*3)
	for lo := 0; lo < len(nqs); lo += per {
		hi := min(lo+per, len(nqs))
		if err := x.batchPass(ctx, nqs[lo:hi], k, f, out[lo:hi]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// batchPass scores the queries qs (normalised) against every live accepted row, a block of
// rows at a time, three queries by two rows per kernel call.
func (x *DiskIndex) batchPass(ctx context.Context, qs [][]float32, k int, f Filter, out [][]Hit) error {
	d, nq := x.dim, len(qs)
	nq3 := (nq + 2) / 3 * 3
	qbuf := make([]float32, nq3*d)
	for i, q := range qs {
		copy(qbuf[i*d:(i+1)*d], q)
	}
	rb := max(2, flatBatchBlockBytes/(4*d)/2*2)
	type wstate struct {
		hs      []flatHeap
		scores  []float32
		scratch []float32
		slots   []int32
	}
	var states []*wstate
	var smu sync.Mutex
	err := x.parallelBlocks(ctx, 0, func() any {
		st := &wstate{hs: make([]flatHeap, nq), scores: make([]float32, 3*rb), scratch: make([]float32, rb*d), slots: make([]int32, rb)}
		for i := range st.hs {
			st.hs[i] = x.newHeap(k)
		}
		smu.Lock()
		states = append(states, st)
		smu.Unlock()
		return st
	}, func(sa any, base int32, rows []float32, cnt int) {
		st := sa.(*wstate)
		for lo := 0; lo < cnt; lo += rb {
			hi := min(lo+rb, cnt)
			block, n := rows[lo*d:hi*d], hi-lo
			var slotOf []int32
			clean := f == nil && n%2 == 0
			if clean {
				for i := lo; i < hi; i++ {
					if x.isDead(base + int32(i)) {
						clean = false
						break
					}
				}
			}
			if !clean {
				n = 0
				for i := lo; i < hi; i++ {
					o := base + int32(i)
					if x.isDead(o) || (f != nil && !f(x.idView(o))) {
						continue
					}
					copy(st.scratch[n*d:(n+1)*d], rows[i*d:(i+1)*d])
					st.slots[n] = o
					n++
				}
				if n == 0 {
					continue
				}
				pad := (n + 1) / 2 * 2
				clear(st.scratch[n*d : pad*d])
				block, slotOf = st.scratch[:pad*d], st.slots[:n]
			}
			for t := 0; t < nq; t += 3 {
				flatTile3(qbuf[t*d:(t+3)*d], block, d, n, st.scores, rb)
				for a := range min(3, nq-t) {
					offerBlock(&st.hs[t+a], st.scores[a*rb:a*rb+n], base+int32(lo), slotOf)
				}
			}
		}
	}, nil, func(any) {})
	if err != nil {
		return err
	}
	for i := range nq {
		h := &states[0].hs[i]
		for _, other := range states[1:] {
			h.Merge(&other.hs[i])
		}
		var err error
		if out[i], err = x.results(h); err != nil {
			return err
		}
	}
	return nil
}

// float32Bytes views v as its bytes (little-endian machines: the files' byte order).
func float32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
}
