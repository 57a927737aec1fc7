//go:build unix

package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentmem/memory/internal/vecfile"
)

// feedFIFO makes a named pipe at path and writes data into it from another goroutine (as a
// program that streams vectors would); the returned channel gives the writer's error.
func feedFIFO(t *testing.T, path string, data []byte) <-chan error {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			done <- err
			return
		}
		_, err = f.Write(data)
		f.Close()
		done <- err
	}()
	return done
}

// float16NPY is an .npy of the rows m as float16 (every value here is exact in a half).
func float16NPY(m [][]float32) []byte {
	var data []byte
	for _, v := range m {
		for _, f := range v {
			var h uint16
			switch f {
			case 1:
				h = 0x3c00
			case 0:
				h = 0
			}
			data = binary.LittleEndian.AppendUint16(data, h)
		}
	}
	dict := "{'descr': '<f2', 'fortran_order': False, 'shape': (" + itoa(len(m)) + ", " + itoa(len(m[0])) + "), }"
	for (10+len(dict)+1)%64 != 0 {
		dict += " "
	}
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(dict)+1), byte((len(dict)+1)>>8))
	return append(append(append(b, dict...), '\n'), data...)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestIndexVectorsStream: --vectors reads a float16 .npy and an .fvecs through a named pipe
// (nothing of the matrix on disk), storing each line's vector; an .fvecs stream with a row
// too few or too many is ErrRowCount, naming the stream.
func TestIndexVectorsStream(t *testing.T) {
	dir, docs := vecFixture(t, 6)
	var m [][]float32
	for i := range 6 {
		m = append(m, unitAxis(8, i))
	}
	for _, kind := range []string{"f16.npy", "fvecs"} {
		t.Run(kind, func(t *testing.T) {
			var data []byte
			if kind == "fvecs" {
				p := filepath.Join(dir, "tmp.fvecs")
				writeMatrix(t, p, vecfile.FVecs, m)
				var err error
				if data, err = os.ReadFile(p); err != nil {
					t.Fatal(err)
				}
			} else {
				data = float16NPY(m)
			}
			fifo := filepath.Join(dir, "pipe."+kind)
			done := feedFIFO(t, fifo, data)
			store := filepath.Join(dir, "s-"+kind)
			mustCLI(t, 0, "index", "--store", store, "--embedder-id", "e5-absent", "--vectors", fifo, docs)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			out, _ := mustCLI(t, 0, "get", "--store", store, "--json", "--vectors", "d4")
			var got docWithVectors
			if err := json.Unmarshal([]byte(out), &got); err != nil || !slices.Equal(got.Embedding, m[4]) {
				t.Fatalf("get --vectors: %s (%v)", out, err)
			}
		})
	}
	p := filepath.Join(dir, "tmp5.fvecs")
	writeMatrix(t, p, vecfile.FVecs, m[:5])
	short, _ := os.ReadFile(p)
	p = filepath.Join(dir, "tmp7.fvecs")
	writeMatrix(t, p, vecfile.FVecs, append(slices.Clone(m), m[0]))
	long, _ := os.ReadFile(p)
	for name, data := range map[string][]byte{"short.fvecs": short, "long.fvecs": long} {
		fifo := filepath.Join(dir, name)
		done := feedFIFO(t, fifo, data)
		_, errs := mustCLI(t, 1, "index", "--store", filepath.Join(dir, "s-"+name), "--embedder-id", "e5-absent", "--vectors", fifo, docs)
		<-done
		if !strings.Contains(errs, "row count mismatch") || !strings.Contains(errs, name) {
			t.Fatalf("%s: %s", name, errs)
		}
	}
}
