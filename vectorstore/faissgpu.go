//go:build faiss && faissgpu

package vectorstore

import (
	"fmt"
	"log/slog"
	"sync"
	"unsafe"

	faiss "github.com/DataIntelligenceCrew/go-faiss"

	"github.com/agentmem/memory/internal/faisslink"
)

// faissBuiltWithGPU tells tests that the faissgpu code is compiled in.
const faissBuiltWithGPU = true

// faissGPUMaxK is the largest k faiss's GPU k-selection handles (GPU_MAX_SELECTION_K);
// larger over-fetches run on the CPU copy.
const faissGPUMaxK = 2048

// faissGPURecloneDivisor: the replica is cloned again once its tombstones exceed
// 1/faissGPURecloneDivisor of what it holds.
const faissGPURecloneDivisor = 4

// faissGPU keeps a GPU replica of the CPU index for searches.
//
// The CPU index stays the master copy: reconstruct, filtered exact scans and persistence use
// it. Writes reach the replica incrementally: added vectors are added to it (faiss adds them
// on the GPU), removed labels stay in it as tombstones that searches skip (faiss's GPU
// indexes have no remove_ids), and only when tombstones exceed a quarter of the replica is it
// cloned again from the CPU index. An IVF index is trained and filled on the GPU (k-means
// there), then copied back to the CPU as the master. HNSW has no GPU implementation in faiss,
// so it stays on the CPU. Without GPU support in the linked library, or without a GPU,
// attach logs why and the index runs on the CPU.
type faissGPU struct {
	mu      sync.Mutex // StandardGpuResources is not thread-safe: one GPU call at a time
	res     *faisslink.GPUResources
	dev     int
	dim     int
	replica *faiss.IndexImpl
	dead    int // removed labels still held by the replica
}

func (g *faissGPU) attach(x *faissIndex) {
	if !x.cfg.GPU {
		return
	}
	if x.spec.kind == faissHNSW {
		slog.Warn("faiss: HNSW has no GPU implementation; using the CPU")
		return
	}
	n, err := faisslink.NumGPUs()
	if err != nil || n == 0 {
		slog.Warn("faiss: GPU requested but none is usable; using the CPU", "gpus", n, "err", err)
		return
	}
	res, err := faisslink.NewGPUResources()
	if err != nil {
		slog.Warn("faiss: cannot create GPU resources; using the CPU", "err", err)
		return
	}
	g.res, g.dev, g.dim = res, 0, x.cfg.Dim
	slog.Info("faiss: searching on the GPU", "device", g.dev, "gpus", n)
}

// sync replaces the replica with a fresh clone of cpu (nil: no index yet).
func (g *faissGPU) sync(cpu *faiss.IndexImpl) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.syncLocked(cpu)
}

func (g *faissGPU) syncLocked(cpu *faiss.IndexImpl) {
	if g.res == nil {
		return
	}
	g.dropLocked()
	if cpu == nil {
		return
	}
	if err := g.cloneLocked(cpu); err != nil {
		g.failLocked("clone", err)
	}
}

// failLocked gives up the GPU after an error: searches use the CPU index from now on.
func (g *faissGPU) failLocked(what string, err error) {
	slog.Warn("faiss: GPU "+what+" failed; using the CPU from now on", "err", err)
	g.dropLocked()
	g.res.Free()
	g.res = nil
}

func (g *faissGPU) cloneLocked(cpu *faiss.IndexImpl) error {
	p, err := cptr(cpu)
	if err != nil {
		return err
	}
	gp, err := g.res.CloneToGPU(g.dev, p)
	if err != nil {
		return err
	}
	h, err := faissHandle(g.dim, gp)
	if err != nil {
		return err
	}
	g.replica, g.dead = h, 0
	return nil
}

// faissHandle gives the faissIndex* p (owned from now on by the handle) a go-faiss handle:
// an empty index whose C pointer is swapped for p. On error p is freed.
func faissHandle(dim int, p unsafe.Pointer) (*faiss.IndexImpl, error) {
	holder, err := faiss.IndexFactory(dim, "Flat", faiss.MetricInnerProduct)
	if err != nil {
		faisslink.FreeIndex(p)
		return nil, fmt.Errorf("go-faiss holder: %w", err)
	}
	slot, err := cptrSlot(holder)
	if err != nil {
		holder.Delete()
		faisslink.FreeIndex(p)
		return nil, err
	}
	faisslink.FreeIndex(*slot)
	*slot = p
	return holder, nil
}

func (g *faissGPU) dropLocked() {
	if g.replica != nil {
		g.replica.Delete()
		g.replica = nil
	}
	g.dead = 0
}

// add adds vectors to the replica (after the CPU index took them).
func (g *faissGPU) add(data []float32, labels []int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.replica == nil || len(labels) == 0 {
		return
	}
	if err := g.replica.AddWithIDs(data, labels); err != nil {
		g.failLocked("add", err)
	}
}

// removed records that n labels left the CPU index cpu; they stay in the replica as
// tombstones until they exceed a quarter of it, when the replica is cloned again.
func (g *faissGPU) removed(n int, cpu *faiss.IndexImpl) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.replica == nil || n == 0 {
		return
	}
	g.dead += n
	if int64(g.dead*faissGPURecloneDivisor) > g.replica.Ntotal() {
		g.syncLocked(cpu)
	}
}

// extra is the number of tombstones the replica holds beyond the CPU index.
func (g *faissGPU) extra() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.replica == nil {
		return 0
	}
	return g.dead
}

// trainAdd trains the untrained CPU IVF index cpu on the GPU, adds vecs under labels there,
// and returns a CPU copy of the result (the new master; the GPU index becomes the replica).
// ok=false (GPU unavailable or failed) leaves cpu as it was: the caller trains on the CPU.
func (g *faissGPU) trainAdd(cpu *faiss.IndexImpl, vecs []float32, labels []int64) (*faiss.IndexImpl, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.res == nil {
		return nil, false
	}
	g.dropLocked()
	fail := func(what string, err error) (*faiss.IndexImpl, bool) {
		slog.Warn("faiss: GPU "+what+" failed; training on the CPU", "err", err)
		g.dropLocked()
		return nil, false
	}
	if err := g.cloneLocked(cpu); err != nil {
		return fail("clone of the untrained index", err)
	}
	if err := g.replica.Train(vecs); err != nil {
		return fail("train", err)
	}
	if err := g.replica.AddWithIDs(vecs, labels); err != nil {
		return fail("add", err)
	}
	gp, err := cptr(g.replica)
	if err != nil {
		return fail("pointer", err)
	}
	back, err := faisslink.CopyToCPU(gp)
	if err != nil {
		return fail("copy to the CPU", err)
	}
	h, err := faissHandle(g.dim, back)
	if err != nil {
		return fail("copy to the CPU", err)
	}
	return h, true
}

// search runs n = len(q)/dim queries on the replica when there is one and kk fits; ok=false
// means "use the CPU".
func (g *faissGPU) search(q []float32, kk int) (dist []float32, labels []int64, ok bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.replica == nil || kk > faissGPUMaxK {
		return nil, nil, false, nil
	}
	dist, labels, err = g.replica.Search(q, int64(kk))
	return dist, labels, true, err
}

// faissGPUCount is the number of GPUs this build can use.
func faissGPUCount() int {
	n, err := faisslink.NumGPUs()
	if err != nil {
		return 0
	}
	return n
}

func (g *faissGPU) device() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.res == nil {
		return "cpu"
	}
	return fmt.Sprintf("gpu:%d", g.dev)
}

func (g *faissGPU) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dropLocked()
	if g.res != nil {
		g.res.Free()
		g.res = nil
	}
}
