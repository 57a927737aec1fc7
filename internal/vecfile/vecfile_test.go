package vecfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func matrix(rows, dim int) [][]float32 {
	out := make([][]float32, rows)
	for i := range out {
		out[i] = make([]float32, dim)
		for j := range out[i] {
			out[i][j] = float32(i*100+j) / 7
		}
	}
	return out
}

func npyBytes(t testing.TB, m [][]float32, dim int) []byte {
	var b bytes.Buffer
	w, err := NewWriter(&b, NPY, int64(len(m)), dim)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range m {
		if err := w.Write(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// npyRaw builds an .npy file by hand: version 1 or 2, the given header dict, then data.
func npyRaw(version byte, dict string, data []byte) []byte {
	b := []byte("\x93NUMPY")
	b = append(b, version, 0)
	h := dict + "\n"
	if version == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h)))
	}
	return append(append(b, h...), data...)
}

func floats(m [][]float32) []byte {
	var b []byte
	for _, v := range m {
		for _, f := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
		}
	}
	return b
}

func fvecsBytes(m [][]float32) []byte {
	var b []byte
	for _, v := range m {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, floats([][]float32{v})...)
	}
	return b
}

// faissBytes is what faiss::write_index writes for an IndexFlat of these rows.
func faissBytes(fourcc string, d int32, ntotal int64, metric int32, words uint64, data []byte) []byte {
	b := []byte(fourcc)
	b = binary.LittleEndian.AppendUint32(b, uint32(d))
	b = binary.LittleEndian.AppendUint64(b, uint64(ntotal))
	b = binary.LittleEndian.AppendUint64(b, 1<<20)
	b = binary.LittleEndian.AppendUint64(b, 1<<20)
	b = append(b, 1) // is_trained
	b = binary.LittleEndian.AppendUint32(b, uint32(metric))
	b = binary.LittleEndian.AppendUint64(b, words)
	return append(b, data...)
}

func readAll(r *Reader) ([][]float32, error) {
	var out [][]float32
	for {
		v, err := r.Next(nil)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
}

func TestReadFormats(t *testing.T) {
	m := matrix(5, 3)
	cases := []struct {
		name, file string
		data       []byte
		format     Format
		metric     string
	}{
		{"npy written", "a.npy", npyBytes(t, m, 3), NPY, ""},
		{"npy v2 by hand", "a.npy", npyRaw(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (5, 3), }", floats(m)), NPY, ""},
		{"npy double quotes, no trailing comma", "x.bin", npyRaw(1, `{"descr": "<f4", "fortran_order": False, "shape": (5,3)}`, floats(m)), NPY, ""},
		{"fvecs", "a.fvecs", fvecsBytes(m), FVecs, ""},
		{"faiss IP", "e5_Flat.index", faissBytes("IxFI", 3, 5, 0, 15, floats(m)), FaissFlat, "ip"},
		{"faiss L2", "l2.index", faissBytes("IxF2", 3, 5, 1, 15, floats(m)), FaissFlat, "l2"},
		{"faiss generic flat", "g.index", faissBytes("IxFl", 3, 5, 0, 15, floats(m)), FaissFlat, "ip"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tc.data), int64(len(tc.data)), tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if r.Format() != tc.format || r.Dim() != 3 || r.Rows() != 5 || r.Metric() != tc.metric {
				t.Fatalf("%s: format %s dim %d rows %d metric %q", tc.name, r.Format(), r.Dim(), r.Rows(), r.Metric())
			}
			got, err := readAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 5 {
				t.Fatalf("%d rows", len(got))
			}
			for i := range m {
				for j := range m[i] {
					if got[i][j] != m[i][j] {
						t.Fatalf("row %d: %v, want %v", i, got[i], m[i])
					}
				}
			}
		})
	}
}

func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "v.fvecs")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := NewWriter(f, FVecs, 4, 2)
	for _, v := range matrix(4, 2) {
		w.Write(v)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := readAll(r); err != nil || len(got) != 4 || got[3][1] != matrix(4, 2)[3][1] {
		t.Fatalf("%v, %v", got, err)
	}
	if _, err := Open(filepath.Join(dir, "missing.npy")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// Every kind of bad input is a typed error that names the file and the row.
func TestBadInput(t *testing.T) {
	m := matrix(4, 3)
	good := npyBytes(t, m, 3)
	nan := matrix(4, 3)
	nan[2][1] = float32(math.NaN())
	inf := matrix(4, 3)
	inf[1][0] = float32(math.Inf(-1))
	badRow := fvecsBytes(m)
	binary.LittleEndian.PutUint32(badRow[2*16:], 4) // row 2 declares dimension 4
	cases := []struct {
		name, file string
		data       []byte
		open       bool // the error comes from NewReader (else from a Next)
		kind       error
		row        int64
		say        string
	}{
		{"npy truncated in the data", "a.npy", good[:len(good)-5], true, ErrTruncated, 3, "a.npy: row 3"},
		{"npy truncated in the header", "a.npy", good[:40], true, ErrTruncated, -1, "header"},
		{"npy trailing bytes", "a.npy", append(append([]byte{}, good...), 0, 0, 0, 0), true, ErrHeader, -1, "trailing"},
		{"npy float64", "a.npy", npyRaw(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4, 3), }", floats(m)), true, ErrHeader, -1, "<f8"},
		{"npy big-endian", "a.npy", npyRaw(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (4, 3), }", floats(m)), true, ErrHeader, -1, ">f4"},
		{"npy Fortran order", "a.npy", npyRaw(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (4, 3), }", floats(m)), true, ErrHeader, -1, "C order"},
		{"npy 1-D of fewer values than the data", "a.npy", npyRaw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", floats(m)), true, ErrHeader, -1, "trailing"},
		{"npy float16 truncated", "a.npy", npyRaw(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (4, 3), }", make([]byte, 23)), true, ErrTruncated, 3, "row 3"},
		{"npy float16 infinity", "a.npy", npyRaw(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (1, 3), }", []byte{0, 0x3c, 0, 0x7c, 0, 0}), false, ErrValue, 0, "component 1"},
		{"npy 3-D", "a.npy", npyRaw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 3), }", floats(m)), true, ErrHeader, -1, "2-D"},
		{"npy dimension 0", "a.npy", npyRaw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 0), }", nil), true, ErrHeader, -1, "dimension 0"},
		{"npy dimension too large", "a.npy", npyRaw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 99999999), }", nil), true, ErrHeader, -1, "dimension"},
		{"npy rows too many", "a.npy", npyRaw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 3), }", nil), true, ErrHeader, -1, "shape"},
		{"npy header length over the cap", "a.npy", append([]byte("\x93NUMPY\x02\x00"), 0xff, 0xff, 0xff, 0x7f), true, ErrHeader, -1, "header of"},
		{"npy version 9", "a.npy", npyRaw(1, "{}", nil)[:6:6], true, ErrTruncated, -1, "magic"},
		{"npy NaN", "a.npy", npyBytes(t, nan, 3), false, ErrValue, 2, "row 2"},
		{"npy infinity", "a.npy", npyBytes(t, inf, 3), false, ErrValue, 1, "row 1"},
		{"fvecs truncated", "a.fvecs", fvecsBytes(m)[:50], true, ErrTruncated, 3, "row 3"},
		{"fvecs dimension 0", "a.fvecs", make([]byte, 16), true, ErrHeader, 0, "dimension 0"},
		{"fvecs negative dimension", "a.fvecs", []byte{0xff, 0xff, 0xff, 0xff}, true, ErrHeader, 0, "dimension -1"},
		{"fvecs empty", "a.fvecs", nil, true, ErrHeader, -1, "empty"},
		{"fvecs a row of another dimension", "a.fvecs", badRow, false, ErrDim, 2, "row 2"},
		{"faiss truncated", "f.index", faissBytes("IxFI", 3, 4, 0, 12, floats(m))[:60], true, ErrTruncated, 1, "row 1"},
		{"faiss header truncated", "f.index", faissBytes("IxFI", 3, 4, 0, 12, nil)[:20], true, ErrTruncated, -1, "header"},
		{"faiss count mismatch", "f.index", faissBytes("IxFI", 3, 4, 0, 11, floats(m)), true, ErrHeader, -1, "ntotal"},
		{"faiss IP fourcc with L2 metric", "f.index", faissBytes("IxFI", 3, 4, 1, 12, floats(m)), true, ErrFormat, -1, "metric type 1"},
		{"faiss other metric", "f.index", faissBytes("IxFl", 3, 4, 2, 12, floats(m)), true, ErrFormat, -1, "metric type 2"},
		{"faiss negative ntotal", "f.index", faissBytes("IxFI", 3, -4, 0, 12, floats(m)), true, ErrHeader, -1, "rows"},
		{"faiss dimension too large", "f.index", faissBytes("IxFI", 1<<20, 1, 0, 1<<20, nil), true, ErrHeader, -1, "dimension"},
		{"faiss HNSW", "f.index", append([]byte("IxHN"), make([]byte, 60)...), true, ErrFormat, -1, "flat"},
		{"unknown", "f.bin", []byte("hello world"), true, ErrFormat, -1, "neither"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tc.data), int64(len(tc.data)), tc.file)
			if !tc.open {
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				_, err = readAll(r)
			} else if err == nil {
				t.Fatalf("open succeeded: %s", r)
			}
			var fe *Error
			if !errors.Is(err, tc.kind) || !errors.As(err, &fe) || fe.Row != tc.row || fe.Path != tc.file || !strings.Contains(err.Error(), tc.say) {
				t.Fatalf("error %v (row %v), want %v at row %d saying %q", err, fe, tc.kind, tc.row, tc.say)
			}
		})
	}
}

// A bad value does not break the stream: the rows after it are read in step.
func TestValueErrorKeepsAlignment(t *testing.T) {
	m := matrix(4, 3)
	m[1][2] = float32(math.NaN())
	data := fvecsBytes(m)
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), "x.fvecs")
	if err != nil {
		t.Fatal(err)
	}
	var ok []int64
	for {
		row := r.Row()
		v, err := r.Next(nil)
		if err == io.EOF {
			break
		}
		if errors.Is(err, ErrValue) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if v[0] != m[row][0] {
			t.Fatalf("row %d out of step: %v", row, v)
		}
		ok = append(ok, row)
	}
	if len(ok) != 3 || ok[1] != 2 {
		t.Fatalf("rows read %v", ok)
	}
}

func TestWriterChecks(t *testing.T) {
	var b bytes.Buffer
	w, err := NewWriter(&b, NPY, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]float32{1, 2}); !errors.Is(err, ErrDim) {
		t.Fatalf("short row: %v", err)
	}
	w.Write([]float32{1, 2, 3})
	if err := w.Close(); !errors.Is(err, ErrRowCount) {
		t.Fatalf("one row of two: %v", err)
	}
	if _, err := NewWriter(&b, FaissFlat, 1, 1); !errors.Is(err, ErrFormat) {
		t.Fatalf("faiss writer: %v", err)
	}
	// The data of a written .npy starts on a 64-byte boundary, as NumPy's does.
	data := npyBytes(t, matrix(3, 5), 5)
	if (len(data)-3*5*4)%64 != 0 {
		t.Fatalf("data at offset %d", len(data)-3*5*4)
	}
}

// fuzzRead reads every row of data as the file name names it; it must never panic, never
// read more rows than declared, and fail with an *Error when it fails.
func fuzzRead(t *testing.T, data []byte, name string) {
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), name)
	if err != nil {
		var fe *Error
		if !errors.As(err, &fe) {
			t.Fatalf("untyped error %v", err)
		}
		return
	}
	if r.Dim() <= 0 || r.Dim() > MaxDim {
		t.Fatalf("dim %d", r.Dim())
	}
	rows := r.Rows()
	var n int64
	for {
		_, err := r.Next(nil)
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, ErrValue) {
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("untyped error %v", err)
			}
			break
		}
		n++
		if n > rows {
			t.Fatalf("read %d rows of %d", n, rows)
		}
	}
}

func FuzzNPY(f *testing.F) {
	f.Add(npyBytes(f, matrix(3, 4), 4))
	f.Add(npyRaw(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", floats(matrix(2, 2))))
	f.Add(npyRaw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 65536), }", nil))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, data, "f.npy") })
}

func FuzzFVecs(f *testing.F) {
	f.Add(fvecsBytes(matrix(3, 4)))
	f.Add([]byte{4, 0, 0, 0, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, data, "f.fvecs") })
}

func FuzzFaissFlat(f *testing.F) {
	f.Add(faissBytes("IxFI", 4, 3, 0, 12, floats(matrix(3, 4))))
	f.Add(faissBytes("IxF2", 2, 2, 1, 4, floats(matrix(2, 2))))
	f.Add(faissBytes("IxFl", 1<<16, 1<<40, 0, 1<<56, nil))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, data, "f.index") })
}

// TestFloat16AndOneVector: an .npy of float16 reads as the float32 values the halves are
// (normal, subnormal, signed zero, the extremes), and a 1-D .npy as one row.
func TestFloat16AndOneVector(t *testing.T) {
	halves := []uint16{0x3c00, 0xc000, 0x0001, 0x8000, 0x7bff, 0x3555, 0x0400, 0xfbff}
	want := []float32{1, -2, 1.0 / (1 << 24), float32(math.Copysign(0, -1)), 65504, 0.333251953125, 1.0 / (1 << 14), -65504}
	var data []byte
	for _, h := range halves {
		data = binary.LittleEndian.AppendUint16(data, h)
	}
	file := npyRaw(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 4), }", data)
	r, err := NewReader(bytes.NewReader(file), int64(len(file)), "h.npy")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := readAll(r)
	if err != nil || len(rows) != 2 || r.Dim() != 4 {
		t.Fatalf("rows %v, %v", rows, err)
	}
	for i, v := range append(rows[0], rows[1]...) {
		if math.Float32bits(v) != math.Float32bits(want[i]) {
			t.Fatalf("value %d: %v (%08x), want %v", i, v, math.Float32bits(v), want[i])
		}
	}
	one := npyRaw(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", floats([][]float32{{1, 2, 3}}))
	r, err = NewReader(bytes.NewReader(one), int64(len(one)), "v.npy")
	if err != nil || r.Rows() != 1 || r.Dim() != 3 {
		t.Fatalf("1-D: %v rows %d dim %d", err, r.Rows(), r.Dim())
	}
	if rows, err := readAll(r); err != nil || len(rows) != 1 || rows[0][2] != 3 {
		t.Fatalf("1-D rows %v, %v", rows, err)
	}
}

// TestStreams: a reader of unknown length (a pipe) reads an .npy by its header and an
// .fvecs until it ends, cleanly at a row's end and as ErrTruncated inside one.
func TestStreams(t *testing.T) {
	m := matrix(5, 3)
	for _, c := range []struct {
		name string
		data []byte
	}{{"s.npy", npyBytes(t, m, 3)}, {"s.fvecs", fvecsBytes(m)}} {
		r, err := NewReader(bytes.NewReader(c.data), -1, c.name)
		if err != nil {
			t.Fatal(c.name, err)
		}
		rows, err := readAll(r)
		if err != nil || len(rows) != 5 || rows[4][2] != m[4][2] {
			t.Fatalf("%s: %d rows, %v", c.name, len(rows), err)
		}
		r, err = NewReader(bytes.NewReader(c.data[:len(c.data)-3]), -1, c.name)
		if err != nil {
			t.Fatal(c.name, err)
		}
		var fe *Error
		if _, err := readAll(r); !errors.Is(err, ErrTruncated) || !errors.As(err, &fe) || fe.Row != 4 {
			t.Fatalf("%s cut inside the last row: %v", c.name, err)
		}
	}
}
