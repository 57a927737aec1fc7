//go:build faiss

package vecfile

import (
	"path/filepath"
	"testing"

	faiss "github.com/DataIntelligenceCrew/go-faiss"

	_ "github.com/agentmem/memory/internal/faisslink"
)

// The reader reads what FAISS itself writes for IndexFlatIP and IndexFlatL2.
func TestReadsFaissWrittenFlat(t *testing.T) {
	m := matrix(37, 24)
	var flat []float32
	for _, v := range m {
		flat = append(flat, v...)
	}
	for _, metric := range []string{"ip", "l2"} {
		var idx *faiss.IndexFlat
		var err error
		if metric == "ip" {
			idx, err = faiss.NewIndexFlatIP(24)
		} else {
			idx, err = faiss.NewIndexFlatL2(24)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := idx.Add(flat); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), metric+".index")
		if err := faiss.WriteIndex(idx, p); err != nil {
			t.Fatal(err)
		}
		idx.Delete()
		r, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if r.Format() != FaissFlat || r.Metric() != metric || r.Rows() != 37 || r.Dim() != 24 {
			t.Fatalf("%s: %s", metric, r)
		}
		got, err := readAll(r)
		r.Close()
		if err != nil || len(got) != 37 {
			t.Fatalf("%s: %d rows, %v", metric, len(got), err)
		}
		for i := range m {
			for j := range m[i] {
				if got[i][j] != m[i][j] {
					t.Fatalf("%s row %d differs", metric, i)
				}
			}
		}
	}
}
