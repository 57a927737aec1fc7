package vecfile

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
)

// maxNpyHeader caps an .npy header's length (NumPy writes a few hundred bytes).
const maxNpyHeader = 1 << 16

var (
	npyDescr   = regexp.MustCompile(`['"]descr['"]\s*:\s*['"]([^'"]*)['"]`)
	npyFortran = regexp.MustCompile(`['"]fortran_order['"]\s*:\s*(True|False)`)
	npyShape   = regexp.MustCompile(`['"]shape['"]\s*:\s*\(([^)]*)\)`)
	npyDims    = regexp.MustCompile(`^\s*(\d+)\s*,\s*(\d+)\s*,?\s*$`)
	npyDim     = regexp.MustCompile(`^\s*(\d+)\s*,\s*$`)
)

// npyHeader reads an .npy header: magic, version, header length, then a Python dict
// literal with descr (only '<f4'), fortran_order (False) and a 2-D shape.
func (r *Reader) npyHeader(size int64) error {
	var pre [10]byte
	if _, err := io.ReadFull(r.br, pre[:8]); err != nil {
		return r.errf(-1, ErrTruncated, "in the magic")
	}
	major := pre[6]
	var hlen, off int64
	switch major {
	case 1:
		if _, err := io.ReadFull(r.br, pre[8:10]); err != nil {
			return r.errf(-1, ErrTruncated, "in the header length")
		}
		hlen, off = int64(pre[8])|int64(pre[9])<<8, 10
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r.br, l[:]); err != nil {
			return r.errf(-1, ErrTruncated, "in the header length")
		}
		hlen, off = int64(le32(l[:])), 12
	default:
		return r.errf(-1, ErrHeader, "NumPy format version %d.%d", major, pre[7])
	}
	if hlen > maxNpyHeader {
		return r.errf(-1, ErrHeader, "header of %d bytes (at most %d)", hlen, maxNpyHeader)
	}
	if size >= 0 && off+hlen > size {
		return r.errf(-1, ErrTruncated, "the header of %d bytes ends past the file's end", hlen)
	}
	h := make([]byte, hlen)
	if _, err := io.ReadFull(r.br, h); err != nil {
		return r.errf(-1, ErrTruncated, "in the header")
	}
	off += hlen
	m := npyDescr.FindSubmatch(h)
	if m == nil {
		return r.errf(-1, ErrHeader, "no descr in %q", h)
	}
	switch d := string(m[1]); d {
	case "<f4":
	case "<f2":
		r.half = true
	default:
		return r.errf(-1, ErrHeader, "dtype %q: want little-endian float32 or float16 ('<f4', '<f2'; numpy: arr.astype('<f4'))", d)
	}
	if m := npyFortran.FindSubmatch(h); m == nil || string(m[1]) != "False" {
		return r.errf(-1, ErrHeader, "not C order (fortran_order must be False; numpy: np.ascontiguousarray)")
	}
	m = npyShape.FindSubmatch(h)
	if m == nil {
		return r.errf(-1, ErrHeader, "no shape in %q", h)
	}
	var rows, dim int64
	var err1, err2 error
	if dm := npyDims.FindSubmatch(m[1]); dm != nil {
		rows, err1 = strconv.ParseInt(string(dm[1]), 10, 64)
		dim, err2 = strconv.ParseInt(string(dm[2]), 10, 64)
	} else if dm := npyDim.FindSubmatch(m[1]); dm != nil { // one vector: a row
		rows = 1
		dim, err2 = strconv.ParseInt(string(dm[1]), 10, 64)
	} else {
		return r.errf(-1, ErrHeader, "shape (%s): want 2-D (rows, dim) or one vector (dim,)", m[1])
	}
	if err := r.setShape(rows, dim, err1, err2); err != nil {
		return err
	}
	return r.checkSize(size, off, int64(r.dim)*r.elemBytes())
}

// setShape checks and sets the declared rows and dimension.
func (r *Reader) setShape(rows, dim int64, errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return r.errf(-1, ErrHeader, "shape: %v", err)
		}
	}
	if dim <= 0 || dim > MaxDim {
		return r.errf(-1, ErrHeader, "dimension %d (want 1 to %d)", dim, MaxDim)
	}
	if rows < 0 || rows > MaxRows {
		return r.errf(-1, ErrHeader, "%d rows (want 0 to %d)", rows, int64(MaxRows))
	}
	r.rows, r.dim = rows, int(dim)
	return nil
}

// fvecsHeader reads the first row's dimension; the rows are the file's size over a row's.
func (r *Reader) fvecsHeader(size int64) error {
	if size == 0 {
		return r.errf(-1, ErrHeader, "empty file (no row tells the dimension)")
	}
	d, err := r.br.Peek(4)
	if err != nil {
		return r.errf(0, ErrTruncated, "the file ends inside the first row's dimension")
	}
	dim := int64(int32(le32(d)))
	if dim <= 0 || dim > MaxDim {
		return r.errf(0, ErrHeader, "dimension %d (want 1 to %d)", dim, MaxDim)
	}
	r.dim = int(dim)
	rowBytes := 4 + 4*dim
	if size < 0 {
		r.rows = MaxRows // unknown: read until the end
		return nil
	}
	r.rows = size / rowBytes
	if size%rowBytes != 0 {
		return r.errf(r.rows, ErrTruncated, "%d bytes is not a whole number of %d-byte rows of dimension %d", size, rowBytes, dim)
	}
	return nil
}

// FAISS metric types (faiss::MetricType).
const (
	faissMetricIP = 0
	faissMetricL2 = 1
)

// faissHeader reads the header faiss::write_index writes for an IndexFlat: the fourcc
// ("IxFI" inner product, "IxF2" L2, "IxFl" either), then write_index_header's fields
// (int32 d, int64 ntotal, two int64 placeholders, a bool is_trained, an int32 metric type,
// a float32 metric argument for metrics other than these two), then the vector of codes:
// an int64 count of 4-byte words (ntotal*d) and the float32 rows.
func (r *Reader) faissHeader(size int64) error {
	var h [45]byte
	if _, err := io.ReadFull(r.br, h[:]); err != nil {
		return r.errf(-1, ErrTruncated, "in the FAISS index header")
	}
	fourcc := string(h[:4])
	d := int64(int32(le32(h[4:])))
	ntotal := int64(le64(h[8:]))
	metric := int32(le32(h[33:]))
	switch {
	case metric == faissMetricIP && fourcc != "IxF2":
		r.metric = "ip"
	case metric == faissMetricL2 && fourcc != "IxFI":
		r.metric = "l2"
	default:
		return r.errf(-1, ErrFormat, "%s index with metric type %d: only inner product (IndexFlatIP) and L2 (IndexFlatL2) flat indexes", fourcc, metric)
	}
	if err := r.setShape(ntotal, d); err != nil {
		return err
	}
	words := le64(h[37:])
	if want := uint64(ntotal) * uint64(d); words != want {
		return r.errf(-1, ErrHeader, "the codes hold %d floats, ntotal %d x d %d is %d", words, ntotal, d, want)
	}
	return r.checkSize(size, 45, int64(r.dim)*4)
}

// String describes the file in a few words.
func (r *Reader) String() string {
	s := fmt.Sprintf("%s: %s, %d x %d float32", r.path, r.format, r.rows, r.dim)
	if r.metric != "" {
		s += ", metric " + r.metric
	}
	return s
}
