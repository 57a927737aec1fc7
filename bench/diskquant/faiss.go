//go:build faiss

package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	faiss "github.com/DataIntelligenceCrew/go-faiss"

	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
)

func init() { runFaiss = faissRun }

// faissRun builds a FAISS index from factory (inner product on normalised vectors, as the
// disk index's cosine) over the n generated vectors, trained on the first 256 x 1,024 of
// them (as many as the disk index's lists at -nlist 4096 and -train 0) and filled a chunk
// at a time, and reports build time and, per nprobe and refine factor, the batch time over
// qs, recall@10 against exact and the p50 and p99 of the first lat queries searched one a call.
func faissRun(factory string, g *gen, n int, qs [][]float32, exact [][]vectorstore.Hit, nprobes, kfactors string, lat int) {
	d := g.dim
	norm := func(vs [][]float32) []float32 {
		out := make([]float32, len(vs)*d)
		for i, v := range vs {
			vecmath.NormalizeInto(out[i*d:(i+1)*d], v)
		}
		return out
	}
	t := time.Now()
	idx, err := faiss.IndexFactory(d, factory, faiss.MetricInnerProduct)
	check(err)
	defer idx.Delete()
	ntrain := min(n, 256*1024)
	check(idx.Train(norm(g.chunk(0, ntrain))))
	fmt.Printf("faiss %s: trained on %d in %v\n", factory, ntrain, time.Since(t).Round(time.Millisecond))
	for lo := 0; lo < n; lo += 1 << 16 {
		check(idx.Add(norm(g.chunk(lo, min(n, lo+1<<16)))))
	}
	fmt.Printf("faiss %s: build %v, VmHWM %s, RssAnon %s\n", factory, time.Since(t).Round(time.Millisecond), status("VmHWM"), status("RssAnon"))
	xq := norm(qs)
	ps, err := faiss.NewParameterSpace()
	check(err)
	defer ps.Delete()
	for _, np := range strings.Split(nprobes, ",") {
		for _, kf := range strings.Split(kfactors, ",") {
			n, _ := strconv.Atoi(np)
			k, _ := strconv.Atoi(kf)
			check(ps.SetIndexParameter(idx, "nprobe", float64(n)))
			if strings.Contains(factory, "RFlat") || strings.Contains(factory, "Refine") {
				check(ps.SetIndexParameter(idx, "k_factor_rf", float64(k)))
			}
			t = time.Now()
			_, labels, err := idx.Search(xq, 10)
			check(err)
			el := time.Since(t)
			got := make([][]vectorstore.Hit, len(qs))
			for i := range qs {
				for _, l := range labels[i*10 : (i+1)*10] {
					if l >= 0 {
						got[i] = append(got[i], vectorstore.Hit{ID: idOf(int(l))})
					}
				}
			}
			// One query a call, as a one-thread search: FAISS searches a single query's
			// lists on one thread (its default parallel mode splits the queries).
			ts := make([]time.Duration, min(lat, len(qs)))
			for i := range ts {
				t = time.Now()
				_, _, err := idx.Search(xq[i*d:(i+1)*d], 10)
				check(err)
				ts[i] = time.Since(t)
			}
			one := ""
			if len(ts) > 0 {
				slices.Sort(ts)
				at := func(f float64) time.Duration { return ts[min(len(ts)-1, int(math.Ceil(f*float64(len(ts))))-1)] }
				one = fmt.Sprintf("; one query a call p50 %v p99 %v", at(0.5).Round(time.Microsecond), at(0.99).Round(time.Microsecond))
			}
			fmt.Printf("  faiss nprobe %d k_factor %d: recall@10 %.4f (first %d), batch of %d %v (%.0f q/s)%s, RssAnon %s\n", n, k, recall(got, exact), len(exact),
				len(qs), el.Round(time.Millisecond), float64(len(qs))/el.Seconds(), one, status("RssAnon"))
		}
	}
}
