//go:build faiss && !faissgpu

package vectorstore

import (
	"log/slog"

	faiss "github.com/DataIntelligenceCrew/go-faiss"
)

// faissBuiltWithGPU tells tests that the faissgpu code is compiled in.
const faissBuiltWithGPU = false

// faissGPU is the GPU replica of a faissIndex; without the faissgpu build tag there is none.
type faissGPU struct{}

func (g *faissGPU) attach(x *faissIndex) {
	if x.cfg.GPU {
		slog.Warn("faiss: GPU requested but this build has no GPU support (build tag faissgpu); using the CPU")
	}
}

func (g *faissGPU) sync(*faiss.IndexImpl)         {}
func (g *faissGPU) add([]float32, []int64)        {}
func (g *faissGPU) removed(int, *faiss.IndexImpl) {}
func (g *faissGPU) extra() int                    { return 0 }
func (g *faissGPU) trainAdd(*faiss.IndexImpl, []float32, []int64) (*faiss.IndexImpl, bool) {
	return nil, false
}

func (g *faissGPU) search([]float32, int) (dist []float32, labels []int64, ok bool, err error) {
	return nil, nil, false, nil
}

// faissGPUCount is the number of GPUs this build can use.
func faissGPUCount() int { return 0 }

func (g *faissGPU) device() string { return "cpu" }
func (g *faissGPU) close()         {}
