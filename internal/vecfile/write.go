package vecfile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
)

// Writer writes a matrix of float32 rows as an .npy or .fvecs file (the formats tools
// that compute embeddings elsewhere write; tests and benchmarks make their inputs with
// it).
type Writer struct {
	bw        *bufio.Writer
	format    Format
	dim       int
	rows, got int64
	b         []byte
}

// NewWriter starts a file of rows x dim float32 in format (NPY or FVecs) on w. Close
// checks that rows rows were written.
func NewWriter(w io.Writer, format Format, rows int64, dim int) (*Writer, error) {
	if dim <= 0 || dim > MaxDim || rows < 0 || rows > MaxRows {
		return nil, fmt.Errorf("%w: %d x %d", ErrHeader, rows, dim)
	}
	x := &Writer{bw: bufio.NewWriterSize(w, 1<<20), format: format, dim: dim, rows: rows}
	switch format {
	case NPY:
		h := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, dim)
		// Pad with spaces and a newline so the data starts on a 64-byte boundary.
		pad := 64 - (10+len(h)+1)%64
		if pad == 64 {
			pad = 0
		}
		h += strings.Repeat(" ", pad) + "\n"
		var pre [10]byte
		copy(pre[:], "\x93NUMPY\x01\x00")
		binary.LittleEndian.PutUint16(pre[8:], uint16(len(h)))
		x.bw.Write(pre[:])
		x.bw.WriteString(h)
	case FVecs:
	default:
		return nil, fmt.Errorf("%w: cannot write %q", ErrFormat, format)
	}
	return x, nil
}

// Write appends one row of length dim.
func (x *Writer) Write(v []float32) error {
	if len(v) != x.dim {
		return fmt.Errorf("%w: row of %d, want %d", ErrDim, len(v), x.dim)
	}
	if x.got >= x.rows {
		return fmt.Errorf("%w: more than the %d rows declared", ErrRowCount, x.rows)
	}
	x.b = x.b[:0]
	if x.format == FVecs {
		x.b = binary.LittleEndian.AppendUint32(x.b, uint32(x.dim))
	}
	for _, f := range v {
		x.b = binary.LittleEndian.AppendUint32(x.b, math.Float32bits(f))
	}
	x.got++
	_, err := x.bw.Write(x.b)
	return err
}

// Close flushes the file; it fails when fewer rows were written than declared.
func (x *Writer) Close() error {
	if err := x.bw.Flush(); err != nil {
		return err
	}
	if x.got != x.rows {
		return fmt.Errorf("%w: %d rows written, %d declared", ErrRowCount, x.got, x.rows)
	}
	return nil
}
