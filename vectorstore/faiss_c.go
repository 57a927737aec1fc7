//go:build faiss

package vectorstore

// #include <faiss/c_api/Index_c.h>
// #include <faiss/c_api/error_c.h>
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	faiss "github.com/DataIntelligenceCrew/go-faiss"
)

// errNoCPtr reports that go-faiss's internal layout is not the one cptrSlot was written for.
var errNoCPtr = errors.New("vectorstore: cannot reach the C pointer inside go-faiss's index (unexpected go-faiss version)")

// cptrSlot returns the address of the FaissIndex* that go-faiss (v0.2.0) keeps inside idx.
//
// go-faiss hides that pointer (its Index interface has an unexported cPtr method), yet the C
// API calls it lacks (reconstruct, the HNSW/IVF shims, the GPU cloner) need it. In v0.2.0 an
// *IndexImpl embeds an Index whose dynamic value is a *faissIndex, a struct with the single
// field `idx *C.FaissIndex`. The layout is checked with reflect, and the pointer is then checked
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
	p := (*C.FaissIndex)(*slot)
	if p == nil || int(C.faiss_Index_d(p)) != impl.D() || int64(C.faiss_Index_ntotal(p)) != impl.Ntotal() {
		return nil, fmt.Errorf("%w: pointer check failed", errNoCPtr)
	}
	return slot, nil
}

// cptr returns the FaissIndex* inside impl.
func cptr(impl *faiss.IndexImpl) (unsafe.Pointer, error) {
	s, err := cptrSlot(impl)
	if err != nil {
		return nil, err
	}
	return *s, nil
}

// faissLastError turns faiss's last error message into an error.
func faissLastError(what string) error {
	return fmt.Errorf("%s: faiss: %s", what, C.GoString(C.faiss_get_last_error()))
}

// reconstruct copies the stored vector of label into out (len = index dimension).
func reconstruct(p unsafe.Pointer, label int64, out []float32) error {
	if C.faiss_Index_reconstruct((*C.FaissIndex)(p), C.idx_t(label), (*C.float)(unsafe.Pointer(&out[0]))) != 0 {
		return faissLastError(fmt.Sprintf("reconstruct %d", label))
	}
	return nil
}
