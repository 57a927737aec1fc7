package topk

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestHeapOrder(t *testing.T) {
	byName := func(a, b string) bool { return a < b }
	for _, c := range []struct {
		name   string
		k      int
		offers []Item[string]
		want   []Item[string]
	}{
		{"ties by value", 3,
			[]Item[string]{{1, "c"}, {float32(math.NaN()), "x"}, {1, "a"}, {2, "d"}, {1, "b"}},
			[]Item[string]{{2, "d"}, {1, "a"}, {1, "b"}}},
		{"fewer than k", 5, []Item[string]{{0.5, "b"}, {0.7, "a"}}, []Item[string]{{0.7, "a"}, {0.5, "b"}}},
		{"k zero", 0, []Item[string]{{1, "a"}}, nil},
		{"negative k", -2, []Item[string]{{1, "a"}}, nil},
		{"a tie displaces a later value", 1, []Item[string]{{1, "b"}, {1, "a"}, {1, "c"}}, []Item[string]{{1, "a"}}},
		{"infinities", 2, []Item[string]{{float32(math.Inf(-1)), "a"}, {float32(math.Inf(1)), "b"}, {0, "c"}},
			[]Item[string]{{float32(math.Inf(1)), "b"}, {0, "c"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := New(c.k, byName)
			for _, it := range c.offers {
				h.Offer(it.Score, it.Value)
			}
			got := h.Sorted()
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

// TestHeapMatchesSort checks the heap, whole and merged from parts, against a full sort.
func TestHeapMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n, k := rng.IntN(300), 1+rng.IntN(40)
		all := make([]Item[int], n)
		for i := range all {
			all[i] = Item[int]{float32(rng.IntN(20)), i} // many ties
		}
		before := func(a, b int) bool { return a < b }
		whole := New(k, before)
		parts := []Heap[int]{New(k, before), New(k, before), New(k, before)}
		for i, it := range all {
			whole.Offer(it.Score, it.Value)
			parts[i%3].Offer(it.Score, it.Value)
		}
		parts[0].Merge(&parts[1])
		parts[0].Merge(&parts[2])
		want := append([]Item[int](nil), all...)
		sort.Slice(want, func(i, j int) bool {
			if want[i].Score != want[j].Score {
				return want[i].Score > want[j].Score
			}
			return want[i].Value < want[j].Value
		})
		want = want[:min(k, n)]
		if whole.Len() != len(want) || whole.Full() != (n >= k) {
			t.Fatalf("trial %d: Len %d Full %v, n %d k %d", trial, whole.Len(), whole.Full(), n, k)
		}
		if len(want) > 0 && whole.Min() != want[len(want)-1].Score {
			t.Fatalf("trial %d: Min %v, want %v", trial, whole.Min(), want[len(want)-1].Score)
		}
		for name, h := range map[string]*Heap[int]{"whole": &whole, "merged": &parts[0]} {
			got := h.Sorted()
			if len(got) != len(want) {
				t.Fatalf("trial %d %s: %d items, want %d", trial, name, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("trial %d %s: item %d = %v, want %v", trial, name, i, got[i], want[i])
				}
			}
		}
	}
}

func BenchmarkOffer(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	scores := make([]float32, 1<<16)
	for i := range scores {
		scores[i] = rng.Float32()
	}
	ids := make([]string, len(scores))
	for i := range ids {
		ids[i] = string(rune('a' + i%26))
	}
	for b.Loop() {
		h := New(10, func(a, b int32) bool { return ids[a] < ids[b] })
		for i, s := range scores {
			h.Offer(s, int32(i))
		}
		_ = h.Sorted()
	}
}
