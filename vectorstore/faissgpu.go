//go:build faiss && faissgpu

package vectorstore

import (
	"fmt"
	"log/slog"
	"sync"

	faiss "github.com/DataIntelligenceCrew/go-faiss"

	"github.com/agentmem/memory/internal/faisslink"
)

// faissBuiltWithGPU tells tests that the faissgpu code is compiled in.
const faissBuiltWithGPU = true

// faissGPUMaxK is the largest k faiss 1.7.3's GPU k-selection handles; larger over-fetches
// run on the CPU copy.
const faissGPUMaxK = 2048

// faissGPU keeps a GPU replica of the CPU index for searches (UNTESTED: no GPU and no GPU
// build of faiss were available when this was written; see BENCHMARKS.md §6).
//
// The CPU index stays the master copy: adds, removes, reconstruct and persistence use it, and
// after every change the replica is cloned again with faiss_index_cpu_to_gpu (simple and
// always consistent, at the price of one upload per write batch and twice the memory).
// HNSW has no GPU implementation in faiss, so it stays on the CPU. Without GPU support in the
// linked library or without a GPU, attach logs why and the index runs on the CPU.
type faissGPU struct {
	mu      sync.Mutex // StandardGpuResources is not thread-safe: one search at a time
	res     *faisslink.GPUResources
	dev     int
	dim     int
	replica *faiss.IndexImpl
}

func (g *faissGPU) attach(x *FaissIndex) {
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
	if g.res == nil {
		return
	}
	g.dropLocked()
	if cpu == nil {
		return
	}
	if err := g.cloneLocked(cpu); err != nil {
		slog.Warn("faiss: GPU clone failed; using the CPU from now on", "err", err)
		g.res.Free()
		g.res = nil
	}
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
	// Give the GPU index a go-faiss handle: an empty index whose C pointer is swapped.
	holder, err := faiss.IndexFactory(g.dim, "Flat", faiss.MetricInnerProduct)
	if err != nil {
		faisslink.FreeIndex(gp)
		return fmt.Errorf("go-faiss holder: %w", err)
	}
	slot, err := cptrSlot(holder)
	if err != nil {
		holder.Delete()
		faisslink.FreeIndex(gp)
		return err
	}
	faisslink.FreeIndex(*slot)
	*slot = gp
	g.replica = holder
	return nil
}

func (g *faissGPU) dropLocked() {
	if g.replica != nil {
		g.replica.Delete()
		g.replica = nil
	}
}

// search runs on the replica when there is one and kk fits; ok=false means "use the CPU".
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
