// Package vecfile reads matrices of precomputed vectors, one vector a row, so that a store
// can take vectors computed elsewhere (on a GPU, by another program) instead of embedding
// its passages again:
//
//   - NumPy .npy files of float32 or float16 ('<f4', '<f2'), 2-D, C order (numpy.save of an
//     (N, D) array; a 1-D (D,) array is one row);
//   - .fvecs files (each row: its dimension as a little-endian int32, then its floats);
//   - FAISS IndexFlatIP / IndexFlatL2 files (faiss.write_index of a flat index: the format
//     of Search-R1's published e5 index), read in pure Go.
//
// A [Reader] streams rows: it never holds more than one row, whatever the file's size, and
// reads pipes and FIFOs as well as files (a 21M x 768 matrix need not be written to disk
// first). A header is checked against the file's size, when it has one, before any row is
// read, and no allocation is
// sized by a header beyond one row of at most [MaxDim] floats. Every problem is an [*Error]
// naming the file and the row, wrapping one of the sentinel errors below.
package vecfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// MaxDim is the largest vector dimension a file may declare.
const MaxDim = 1 << 16

// MaxRows is the largest number of rows a file may declare (2^40: far beyond any corpus).
const MaxRows = 1 << 40

// Errors a Reader wraps (in an *Error naming the file and row).
var (
	// ErrFormat: the file is not of a format this package reads (its magic bytes or, for a
	// FAISS file, an index type other than a flat one).
	ErrFormat = errors.New("vecfile: unsupported file format")
	// ErrHeader: the header is malformed or declares what the file cannot hold (a dtype
	// other than float32 or float16, Fortran order, a dimension of 0 or over MaxDim, trailing bytes).
	ErrHeader = errors.New("vecfile: bad header")
	// ErrTruncated: the file ends before the rows its header declares.
	ErrTruncated = errors.New("vecfile: file is truncated")
	// ErrDim: a row's dimension differs from the file's (an .fvecs row), or from the one
	// the caller expects.
	ErrDim = errors.New("vecfile: wrong vector dimension")
	// ErrValue: a row holds NaN or an infinity. The row is consumed: the next Next reads
	// the next row.
	ErrValue = errors.New("vecfile: NaN or infinite value")
	// ErrRowCount: the file's rows do not match what it must be aligned with.
	ErrRowCount = errors.New("vecfile: row count mismatch")
)

// Error is a problem with a vector file: its path, the row (0-based; -1 for the header)
// and what is wrong.
type Error struct {
	Path string
	Row  int64
	Err  error  // one of the package's sentinel errors (or an I/O error)
	Msg  string // details
}

func (e *Error) Error() string {
	where := "header"
	if e.Row >= 0 {
		where = fmt.Sprintf("row %d", e.Row)
	}
	s := fmt.Sprintf("%s: %s: %v", e.Path, where, e.Err)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Format names a file format.
type Format string

// The formats a Reader reads.
const (
	NPY       Format = "npy"
	FVecs     Format = "fvecs"
	FaissFlat Format = "faiss-flat"
)

// Reader streams the rows of a vector file.
type Reader struct {
	path   string
	format Format
	metric string // FAISS: "ip" or "l2"; "" for the others
	dim    int
	rows   int64
	row    int64 // the next row to read
	br     *bufio.Reader
	c      io.Closer // nil for NewReader
	buf    []byte
	half   bool // the rows hold float16 values (an .npy of '<f2')
}

// elemBytes is the bytes of one value of a row.
func (r *Reader) elemBytes() int64 {
	if r.half {
		return 2
	}
	return 4
}

// Open opens a vector file, telling its format from its first bytes (NumPy's and FAISS's
// magic) or, for .fvecs, which has none, from its extension.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	size := fi.Size()
	if !fi.Mode().IsRegular() { // a pipe, a FIFO, /dev/stdin: a stream of unknown length
		size = -1
	}
	r, err := NewReader(f, size, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.c = f
	return r, nil
}

// NewReader reads the vector file of size bytes that src streams; name is its path (errors
// name it; an ".fvecs" extension selects that format). A size of -1 is a stream of unknown
// length (a pipe): an .npy or FAISS header still declares its rows, an .fvecs stream is
// read until it ends (Rows is then MaxRows until Next returns io.EOF).
func NewReader(src io.Reader, size int64, name string) (*Reader, error) {
	r := &Reader{path: name, br: bufio.NewReaderSize(src, 1<<20)}
	head, _ := r.br.Peek(6)
	switch {
	case len(head) >= 6 && string(head) == "\x93NUMPY":
		r.format = NPY
		err := r.npyHeader(size)
		return r, err
	case len(head) >= 4 && (string(head[:4]) == "IxFI" || string(head[:4]) == "IxF2" || string(head[:4]) == "IxFl"):
		r.format = FaissFlat
		return r, r.faissHeader(size)
	case len(head) >= 4 && strings.HasPrefix(string(head[:2]), "Ix"):
		return nil, r.errf(-1, ErrFormat, "a FAISS index of type %q: only flat indexes (IndexFlatIP, IndexFlatL2) hold their vectors as they are", head[:4])
	case strings.EqualFold(filepath.Ext(name), ".fvecs"):
		r.format = FVecs
		return r, r.fvecsHeader(size)
	}
	return nil, r.errf(-1, ErrFormat, "neither .npy nor a FAISS flat index, and not named .fvecs")
}

func (r *Reader) errf(row int64, kind error, format string, args ...any) *Error {
	return &Error{Path: r.path, Row: row, Err: kind, Msg: fmt.Sprintf(format, args...)}
}

// Path is the file's path, Format its format, Dim the dimension of its vectors and Rows
// their number.
func (r *Reader) Path() string   { return r.path }
func (r *Reader) Format() Format { return r.format }
func (r *Reader) Dim() int       { return r.dim }
func (r *Reader) Rows() int64    { return r.rows }

// Metric is the metric of a FAISS index ("ip" or "l2"); "" for the other formats.
func (r *Reader) Metric() string { return r.metric }

// Row is the index of the next row Next reads.
func (r *Reader) Row() int64 { return r.row }

// Next reads the next row into dst (reallocated when shorter than Dim) and returns it; io.EOF
// after the last row. A row holding NaN or an infinity is returned with an *Error wrapping
// ErrValue (the row is consumed). Any other error ends the stream.
func (r *Reader) Next(dst []float32) ([]float32, error) {
	if r.row >= r.rows {
		return nil, io.EOF
	}
	row := r.row
	if r.format == FVecs {
		var d [4]byte
		if n, err := io.ReadFull(r.br, d[:]); err != nil {
			if n == 0 && errors.Is(err, io.EOF) && r.rows == MaxRows { // a stream's clean end
				r.rows = row
				return nil, io.EOF
			}
			return nil, r.readErr(row, err)
		}
		if got := int32(le32(d[:])); int(got) != r.dim {
			r.rows = row // the stream is out of step: end it
			return nil, r.errf(row, ErrDim, "dimension %d, the file's first row has %d", got, r.dim)
		}
	}
	need := r.dim * int(r.elemBytes())
	if cap(r.buf) < need {
		r.buf = make([]byte, need)
	}
	b := r.buf[:need]
	if _, err := io.ReadFull(r.br, b); err != nil {
		return nil, r.readErr(row, err)
	}
	r.row++
	if cap(dst) < r.dim {
		dst = make([]float32, r.dim)
	}
	dst = dst[:r.dim]
	bad := -1
	for i := range dst {
		var v float32
		if r.half {
			v = halfToFloat(uint16(b[2*i]) | uint16(b[2*i+1])<<8)
		} else {
			v = math.Float32frombits(le32(b[4*i:]))
		}
		if bad < 0 && (v != v || math.IsInf(float64(v), 0)) {
			bad = i
		}
		dst[i] = v
	}
	if bad >= 0 {
		return dst, r.errf(row, ErrValue, "component %d is %v", bad, dst[bad])
	}
	return dst, nil
}

// readErr is the error of a row that could not be read whole: the file ended (it shrank
// after its header was checked) or an I/O error.
func (r *Reader) readErr(row int64, err error) error {
	r.rows = row
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return r.errf(row, ErrTruncated, "the file ends inside the row")
	}
	return &Error{Path: r.path, Row: row, Err: err}
}

// Close closes the file (a Reader of NewReader closes nothing).
func (r *Reader) Close() error {
	if r.c == nil {
		return nil
	}
	return r.c.Close()
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func le64(b []byte) uint64 {
	return uint64(le32(b)) | uint64(le32(b[4:]))<<32
}

// checkSize compares the bytes left after the header (size-off) with rows rows of rowBytes:
// fewer is ErrTruncated naming the first incomplete row, more is ErrHeader.
func (r *Reader) checkSize(size, off, rowBytes int64) error {
	if size < 0 {
		return nil // unknown: rows are checked as they are read
	}
	left := size - off
	need := r.rows * rowBytes // rows <= MaxRows, rowBytes <= 4*(MaxDim+1): no overflow
	switch {
	case left < need:
		return r.errf(left/rowBytes, ErrTruncated, "%d rows of %d bytes need %d bytes after the header, the file has %d", r.rows, rowBytes, need, max(left, 0))
	case left > need:
		return r.errf(-1, ErrHeader, "%d trailing bytes after the %d rows the header declares", left-need, r.rows)
	}
	return nil
}

// halfToFloat converts an IEEE 754 binary16 value to float32 (exactly: every half is a
// float32).
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	case frac == 0: // zero
		return math.Float32frombits(sign)
	}
	// subnormal: frac * 2^-24
	v := float32(frac) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}
