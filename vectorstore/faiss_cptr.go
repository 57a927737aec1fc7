//go:build faiss

package vectorstore

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	faiss "github.com/DataIntelligenceCrew/go-faiss"

	"github.com/agentmem/memory/internal/faisslink"
)

// errNoCPtr reports that go-faiss's internal layout is not the one cptrSlot was written for.
var errNoCPtr = errors.New("vectorstore: cannot reach the C pointer inside go-faiss's index (unexpected go-faiss version)")

// cptrSlot returns the address of the faissIndex* that go-faiss (v0.2.0) keeps inside idx.
//
// go-faiss hides that pointer (its Index interface has an unexported cPtr method), yet the C
// API calls it lacks (reconstruct, the HNSW/IVF shims, the GPU cloner) need it. In v0.2.0 an
// *IndexImpl embeds an Index whose dynamic value is a *faissIndex, a struct with the single
// field `idx *C.faissIndex`. The layout is checked with reflect, and the pointer is then checked
// against the index's own D() and Ntotal() through the C API, so a different go-faiss fails
// with errNoCPtr rather than misbehaving.
func cptrSlot(impl *faiss.IndexImpl) (*unsafe.Pointer, error) {
	if impl == nil || impl.Index == nil {
		return nil, errNoCPtr
	}
	t := reflect.TypeOf(impl.Index)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || t.Elem().NumField() != 1 ||
		t.Elem().Field(0).Type.Kind() != reflect.Pointer || t.Elem().Size() != unsafe.Sizeof(uintptr(0)) {
		return nil, fmt.Errorf("%w: dynamic type %v", errNoCPtr, t)
	}
	iface := impl.Index
	data := (*[2]unsafe.Pointer)(unsafe.Pointer(&iface))[1] // the *faissIndex
	slot := (*unsafe.Pointer)(data)
	p := *slot
	if p == nil || faisslink.IndexD(p) != impl.D() || faisslink.IndexNtotal(p) != impl.Ntotal() {
		return nil, fmt.Errorf("%w: pointer check failed", errNoCPtr)
	}
	return slot, nil
}

// cptr returns the faissIndex* inside impl.
func cptr(impl *faiss.IndexImpl) (unsafe.Pointer, error) {
	s, err := cptrSlot(impl)
	if err != nil {
		return nil, err
	}
	return *s, nil
}

// reconstruct copies the stored vector of label into out (len = index dimension).
func reconstruct(p unsafe.Pointer, label int64, out []float32) error {
	return faisslink.Reconstruct(p, label, out)
}

// faissHNSWEf reports the HNSW efConstruction and efSearch in force (for tests and tuning).
func faissHNSWEf(x *faissIndex) (efConstruction, efSearch int, err error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.cp == nil {
		return 0, 0, errNoCPtr
	}
	return faisslink.HNSWEf(x.cp)
}
