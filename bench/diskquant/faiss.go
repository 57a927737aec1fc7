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
// disk index's cosine), trained on up to 256 x nlist vectors, and reports build time and,
// per nprobe and refine factor, the batch time and recall@10 against exact.
func faissRun(factory string, vecs, qs [][]float32, exact [][]vectorstore.Hit, nprobes, kfactors string) {
	d := len(vecs[0])
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
	xb := norm(vecs)
	ntrain := min(len(vecs), 256*1024)
	check(idx.Train(xb[:ntrain*d]))
	check(idx.Add(xb))
	fmt.Printf("faiss %s: build %v (trained on %d), RssAnon %s\n", factory, time.Since(t).Round(time.Millisecond), ntrain, rssAnon())
	xq := norm(qs)
	ps, err := faiss.NewParameterSpace()
	check(err)
	defer ps.Delete()
	for _, np := range strings.Split(nprobes, ",") {
		for _, kf := range strings.Split(kfactors, ",") {
			n, _ := strconv.Atoi(np)
			k, _ := strconv.Atoi(kf)
			check(ps.SetIndexParameter(idx, "nprobe", float64(n)))
			if strings.Contains(factory, "RFlat") {
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
						got[i] = append(got[i], vectorstore.Hit{ID: fmt.Sprintf("v%08d", l)})
					}
				}
			}
			fmt.Printf("  faiss nprobe %d k_factor %d: recall@10 %.4f, batch %v (%v/query), RssAnon %s\n", n, k, recall(got, exact),
				el.Round(time.Millisecond), el/time.Duration(len(qs)), rssAnon())
		}
	}
}
