//go:build faiss

package main

import (
	"fmt"
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
// qs and recall@10 against exact.
func faissRun(factory string, g *gen, n int, qs [][]float32, exact [][]vectorstore.Hit, nprobes, kfactors string) {
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
			fmt.Printf("  faiss nprobe %d k_factor %d: recall@10 %.4f, batch of %d %v (%.0f q/s), RssAnon %s\n", n, k, recall(got, exact),
				len(qs), el.Round(time.Millisecond), float64(len(qs))/el.Seconds(), status("RssAnon"))
		}
	}
}
