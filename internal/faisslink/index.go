//go:build faiss

package faisslink

// #include <faiss/c_api/Index_c.h>
// #include <faiss/c_api/error_c.h>
import "C"

import (
	"fmt"
	"unsafe"
)

// IndexD returns the dimension of the FaissIndex* p.
func IndexD(p unsafe.Pointer) int { return int(C.faiss_Index_d((*C.FaissIndex)(p))) }

// IndexNtotal returns the number of vectors held by the FaissIndex* p.
func IndexNtotal(p unsafe.Pointer) int64 { return int64(C.faiss_Index_ntotal((*C.FaissIndex)(p))) }

// LastError returns faiss's last error message, prefixed with what.
func LastError(what string) error {
	return fmt.Errorf("%s: faiss: %s", what, C.GoString(C.faiss_get_last_error()))
}

// Reconstruct copies the stored vector of id (an external label for an IndexIDMap2, an IVF
// index with a direct map, or a position otherwise) into out, which must hold IndexD floats.
func Reconstruct(p unsafe.Pointer, id int64, out []float32) error {
	if len(out) == 0 || len(out) < IndexD(p) {
		return fmt.Errorf("faisslink: reconstruct into %d floats, index has %d dims", len(out), IndexD(p))
	}
	if C.faiss_Index_reconstruct((*C.FaissIndex)(p), C.idx_t(id), (*C.float)(unsafe.Pointer(&out[0]))) != 0 {
		return LastError(fmt.Sprintf("reconstruct %d", id))
	}
	return nil
}

// FreeIndex frees the FaissIndex* p.
func FreeIndex(p unsafe.Pointer) { C.faiss_Index_free((*C.FaissIndex)(p)) }
