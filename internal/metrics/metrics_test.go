package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestStoreCollector: documents per collection, and the folder's bytes (an in-memory
// store has a temporary folder).
func TestStoreCollector(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		dir  string
		disk bool
	}{{"on disk", t.TempDir(), true}, {"in memory", "", true}} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := memory.Open(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if err := m.Add(ctx, memory.Document{ID: "a", Text: "one"}, memory.Document{ID: "b", Text: "two"}); err != nil {
				t.Fatal(err)
			}
			c, err := m.CreateCollection("notes")
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Add(ctx, memory.Document{ID: "n", Text: "three"}); err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(NewStoreCollector(m))
			want := `
# HELP memory_store_documents Documents stored, by collection.
# TYPE memory_store_documents gauge
memory_store_documents{collection="default"} 2
memory_store_documents{collection="notes"} 1
`
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "memory_store_documents"); err != nil {
				t.Error(err)
			}
			n, err := testutil.GatherAndCount(reg, "memory_store_disk_bytes")
			if err != nil {
				t.Fatal(err)
			}
			if (n == 1) != tc.disk {
				t.Fatalf("%d memory_store_disk_bytes series, want 1", n)
			}
			if tc.disk {
				mfs, _ := reg.Gather()
				for _, mf := range mfs {
					if mf.GetName() == "memory_store_disk_bytes" && mf.GetMetric()[0].GetGauge().GetValue() < 1000 {
						t.Errorf("disk bytes %v", mf.GetMetric()[0].GetGauge().GetValue())
					}
				}
			}
		})
	}
}

// TestObserveSearch: each search reports the stages its mode ran, and its total.
func TestObserveSearch(t *testing.T) {
	for _, tc := range []struct {
		st   memory.SearchStats
		want []string
	}{
		{memory.SearchStats{Mode: memory.BM25, BM25: time.Millisecond, Total: 2 * time.Millisecond, Allowed: -1}, []string{"bm25/bm25", "bm25/total"}},
		{memory.SearchStats{Mode: memory.Dense, Embed: 1, Dense: 1, Total: 3, Allowed: -1}, []string{"dense/dense", "dense/embed", "dense/total"}},
		{memory.SearchStats{Mode: memory.Hybrid, BM25: 1, Embed: 1, Dense: 1, Fuse: 1, Rerank: 1, Filter: 1, Allowed: 5, Total: 6},
			[]string{"hybrid/bm25", "hybrid/dense", "hybrid/embed", "hybrid/filter", "hybrid/fuse", "hybrid/rerank", "hybrid/total"}},
	} {
		h := newSearchStages()
		observeSearch(h, tc.st)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(h)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range mfs[0].GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			got = append(got, l["mode"]+"/"+l["stage"])
			if m.GetHistogram().GetSampleCount() != 1 {
				t.Errorf("%v: %d samples", l, m.GetHistogram().GetSampleCount())
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%+v: stages %v, want %v", tc.st, got, tc.want)
		}
	}
}

// TestRetrieveRegistersOnce: a second Retrieve in the same registry is refused, in a
// registry of its own accepted (several servers in one process).
func TestRetrieveRegistersOnce(t *testing.T) {
	reg := NewRegistry()
	if _, err := NewRetrieve(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRetrieve(reg); err == nil {
		t.Fatal("registered twice in one registry")
	}
	if _, err := NewRetrieve(NewRegistry()); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMCP(NewRegistry()); err != nil {
		t.Fatal(err)
	}
}
