package sop

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// syntheticLibrary returns the evaluation procedures plus synthetic ones up to n in all.
// Synthetic triggers are 1 to 3 words drawn from a 5,000-word vocabulary with a Zipf
// distribution, so that a few words are shared by hundreds of procedures; a tenth of the
// synthetic triggers reuse the words of the real ones ("error", "deploy") to make the
// postings the labelled queries hit long.
func syntheticLibrary(tb testing.TB, n int) *Library {
	tb.Helper()
	lib, err := LoadDir(filepath.Join("testdata", "eval", "procedures"), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	var real []string
	for _, s := range lib.List("") {
		real = append(real, s.Trigger...)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, 4999)
	syll := []string{"ka", "lo", "mi", "ne", "ru", "ta", "vo", "si", "pe", "da", "gu", "fe", "zo", "bi"}
	vocab := make([]string, 5000)
	for i := range vocab {
		w := ""
		for x := i + 7; x > 0 || len(w) < 4; x /= len(syll) {
			w += syll[x%len(syll)]
		}
		vocab[i] = w
	}
	for i := lib.Len(); i < n; i++ {
		var trig Triggers
		for range 3 + rng.IntN(6) {
			if rng.IntN(10) == 0 {
				trig = append(trig, real[rng.IntN(len(real))])
				continue
			}
			words := 1 + rng.IntN(3)
			t := ""
			for w := range words {
				if w > 0 {
					t += " "
				}
				t += vocab[zipf.Uint64()]
			}
			trig = append(trig, t)
		}
		s := Procedure{Name: fmt.Sprintf("synthetic_%05d", i), Trigger: trig, Priority: rng.IntN(11),
			Category: fmt.Sprintf("cat%d", i%20), Steps: []Step{{Action: "step one"}, {Action: "step two", Condition: "x"}}}
		if err := lib.Add(s); err != nil {
			tb.Fatal(err)
		}
	}
	return lib
}

// BenchmarkMatch10k measures Match over 10,000 procedures with the labelled queries, and
// reports the p50 and p99 latency of single calls.
func BenchmarkMatch10k(b *testing.B) {
	lib := syntheticLibrary(b, 10000)
	qs := loadLabelled(b)
	lat := make([]time.Duration, 0, b.N)
	var matched int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		ms := lib.Match(qs[i%len(qs)].Q, 5, MatchOptions{})
		lat = append(lat, time.Since(start))
		matched += len(ms)
	}
	b.StopTimer()
	reportPercentiles(b, lat)
	if matched == 0 {
		b.Fatal("no query matched")
	}
}

// BenchmarkBaseline10k is the naive substring baseline over the same procedures.
func BenchmarkBaseline10k(b *testing.B) {
	lib := syntheticLibrary(b, 10000)
	sops := lib.List("")
	qs := loadLabelled(b)
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		baselineMatch(sops, qs[i%len(qs)].Q, 5)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

// BenchmarkLoad10k measures indexing 10,000 procedures (Add one by one).
func BenchmarkLoad10k(b *testing.B) {
	lib := syntheticLibrary(b, 10000)
	sops := lib.List("")
	b.ResetTimer()
	for b.Loop() {
		l := NewLibrary(Options{})
		for _, s := range sops {
			if err := l.Add(s); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) }
	b.ReportMetric(pct(0.50), "p50-ns")
	b.ReportMetric(pct(0.99), "p99-ns")
}
