//go:build faiss && faissgpu

package faisslink

/*
#include <stddef.h>

// Prototypes of faiss's c_api/gpu functions (1.7.3 through 1.15) (DeviceUtils_c.h, StandardGpuResources_c.h,
// GpuAutoTune_c.h), declared here rather than included: Debian's libfaiss-dev ships no
// c_api/gpu headers, and StandardGpuResources_c.h includes <cuda_runtime_api.h>. The opaque
// Faiss* pointer types become void*, which is ABI-identical. The references are weak, so the
// program also links against a CPU-only libfaiss_c, where they are NULL. A weak reference
// does not pull an object out of a static archive: with a static GPU libfaiss_c.a, add
// CGO_LDFLAGS="-Wl,--undefined=faiss_get_num_gpus -Wl,--undefined=faiss_index_cpu_to_gpu
// -Wl,--undefined=faiss_StandardGpuResources_new" (cgo refuses those flags in #cgo lines);
// a shared libfaiss_c.so needs nothing.
extern int faiss_get_num_gpus(int* p_output) __attribute__((weak));
extern int faiss_StandardGpuResources_new(void** p_res) __attribute__((weak));
extern void faiss_StandardGpuResources_free(void* res) __attribute__((weak));
extern int faiss_index_cpu_to_gpu(void* provider, int device, const void* index, void** p_out) __attribute__((weak));
extern int faiss_index_gpu_to_cpu(const void* gpu_index, void** p_out) __attribute__((weak));

static int mg_have_gpu_api(void) {
	return faiss_get_num_gpus != NULL && faiss_StandardGpuResources_new != NULL &&
	       faiss_StandardGpuResources_free != NULL && faiss_index_cpu_to_gpu != NULL;
}
static int mg_num_gpus(int* n) { return faiss_get_num_gpus(n); }
static int mg_res_new(void** r) { return faiss_StandardGpuResources_new(r); }
static void mg_res_free(void* r) { faiss_StandardGpuResources_free(r); }
static int mg_cpu_to_gpu(void* r, int dev, const void* idx, void** out) {
	return faiss_index_cpu_to_gpu(r, dev, idx, out);
}
static int mg_have_gpu_to_cpu(void) { return faiss_index_gpu_to_cpu != NULL; }
static int mg_gpu_to_cpu(const void* idx, void** out) { return faiss_index_gpu_to_cpu(idx, out); }
*/
import "C"

import (
	"errors"
	"unsafe"
)

// ErrNoGPUSupport reports that the linked libfaiss_c was built without GPU support.
var ErrNoGPUSupport = errors.New("faisslink: the linked faiss library has no GPU support")

// NumGPUs reports how many GPUs faiss sees (ErrNoGPUSupport when the library has no GPU code).
func NumGPUs() (int, error) {
	if C.mg_have_gpu_api() == 0 {
		return 0, ErrNoGPUSupport
	}
	var n C.int
	if C.mg_num_gpus(&n) != 0 {
		return 0, LastError("faiss_get_num_gpus")
	}
	return int(n), nil
}

// GPUResources is a faiss StandardGpuResources (not safe for concurrent use).
type GPUResources struct{ p unsafe.Pointer }

// NewGPUResources allocates a StandardGpuResources.
func NewGPUResources() (*GPUResources, error) {
	if C.mg_have_gpu_api() == 0 {
		return nil, ErrNoGPUSupport
	}
	r := &GPUResources{}
	if C.mg_res_new(&r.p) != 0 {
		return nil, LastError("faiss_StandardGpuResources_new")
	}
	return r, nil
}

// Free releases the resources.
func (r *GPUResources) Free() {
	if r != nil && r.p != nil {
		C.mg_res_free(r.p)
		r.p = nil
	}
}

// CloneToGPU copies the CPU FaissIndex* cpu to GPU device and returns the GPU index (a
// FaissGpuIndex*, usable wherever a FaissIndex* is; free it with FreeIndex).
func (r *GPUResources) CloneToGPU(device int, cpu unsafe.Pointer) (unsafe.Pointer, error) {
	var out unsafe.Pointer
	if C.mg_cpu_to_gpu(r.p, C.int(device), cpu, &out) != 0 {
		return nil, LastError("faiss_index_cpu_to_gpu")
	}
	return out, nil
}

// CopyToCPU copies the GPU index gpu (from CloneToGPU) back into a new CPU FaissIndex*
// (free it with FreeIndex).
func CopyToCPU(gpu unsafe.Pointer) (unsafe.Pointer, error) {
	if C.mg_have_gpu_to_cpu() == 0 {
		return nil, ErrNoGPUSupport
	}
	var out unsafe.Pointer
	if C.mg_gpu_to_cpu(gpu, &out) != 0 {
		return nil, LastError("faiss_index_gpu_to_cpu")
	}
	return out, nil
}
