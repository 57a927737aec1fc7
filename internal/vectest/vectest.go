// Package vectest makes the vectors and ids the vector index tests share (the in-package
// tests of vectorstore and the conformance checks of vectorstore/indextest, which cannot
// import each other).
package vectest

import (
	"fmt"
	"math/rand/v2"
)

// RandVecs returns n vectors of dim standard normal values drawn from rng, in one
// allocation (a million-vector benchmark would otherwise hand the GC a million objects).
func RandVecs(rng *rand.Rand, n, dim int) [][]float32 {
	vs := make([][]float32, n)
	slab := make([]float32, n*dim)
	for i := range vs {
		v := slab[i*dim : (i+1)*dim : (i+1)*dim]
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		vs[i] = v
	}
	return vs
}

// IDs returns n ids "doc-00000", "doc-00001", ... (sorted as their numbers).
func IDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("doc-%05d", i)
	}
	return ids
}
