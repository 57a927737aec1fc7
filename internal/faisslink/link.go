//go:build faiss

package faisslink

// #cgo LDFLAGS: -lfaiss_c -fopenmp -lopenblas -lstdc++ -lm
// #cgo CXXFLAGS: -std=c++17 -O2
// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrWrongType reports that a shim was given an index of a type it does not apply to.
var ErrWrongType = errors.New("faisslink: index is not of the needed type")

const errLen = 512

func result(rc C.int, buf []byte, what string) error {
	switch rc {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: %w", what, ErrWrongType)
	default:
		n := 0
		for n < len(buf) && buf[n] != 0 {
			n++
		}
		return fmt.Errorf("%s: faiss: %s", what, buf[:n])
	}
}

// SetHNSWEf sets efConstruction and efSearch of the IndexHNSW index points to (a FaissIndex*,
// possibly an IndexIDMap/IndexIDMap2 around one). A value <= 0 keeps the current setting.
func SetHNSWEf(index unsafe.Pointer, efConstruction, efSearch int) error {
	buf := make([]byte, errLen)
	rc := C.memory_faiss_hnsw_set_ef(index, C.int(efConstruction), C.int(efSearch), (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	return result(rc, buf, "set HNSW ef")
}

// HNSWEf reports efConstruction and efSearch of the IndexHNSW index points to.
func HNSWEf(index unsafe.Pointer) (efConstruction, efSearch int, err error) {
	var c, s C.int
	if rc := C.memory_faiss_hnsw_get_ef(index, &c, &s); rc != 0 {
		return 0, 0, result(rc, nil, "get HNSW ef")
	}
	return int(c), int(s), nil
}

// UseIVFHashDirectMap gives the IndexIVF index points to a hashtable direct map, so that
// reconstruct by id works while remove_ids keeps working.
func UseIVFHashDirectMap(index unsafe.Pointer) error {
	buf := make([]byte, errLen)
	rc := C.memory_faiss_ivf_hash_direct_map(index, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	return result(rc, buf, "IVF hashtable direct map")
}

// RemoveIDsArray removes ids from the FaissIndex* index through an IDSelectorArray (which an
// IVF index with a hashtable direct map requires) and reports how many were removed.
func RemoveIDsArray(index unsafe.Pointer, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	buf := make([]byte, errLen)
	var removed C.long
	rc := C.memory_faiss_remove_ids_array(index, C.long(len(ids)), (*C.long)(unsafe.Pointer(&ids[0])), &removed, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	return int(removed), result(rc, buf, "remove ids")
}

// SearchSerial searches the FaissIndex* index for the k nearest neighbours of each of the
// len(x)/d queries in x with OpenMP limited to the calling thread (see shim.h): for single
// queries it avoids waking an OpenMP team per call. Missing results have label -1.
func SearchSerial(index unsafe.Pointer, d int, x []float32, k int) (dist []float32, labels []int64, err error) {
	n := len(x) / d
	if n == 0 || k <= 0 {
		return nil, nil, nil
	}
	dist = make([]float32, n*k)
	labels = make([]int64, n*k)
	buf := make([]byte, errLen)
	rc := C.memory_faiss_search_serial(index, C.long(n), (*C.float)(unsafe.Pointer(&x[0])), C.long(k),
		(*C.float)(unsafe.Pointer(&dist[0])), (*C.long)(unsafe.Pointer(&labels[0])), (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	if err := result(rc, buf, "search"); err != nil {
		return nil, nil, err
	}
	return dist, labels, nil
}
