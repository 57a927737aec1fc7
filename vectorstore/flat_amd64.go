package vectorstore

import "golang.org/x/sys/cpu"

// flatAVX2 selects the AVX2+FMA kernels; tests turn it off to exercise the portable ones.
var flatAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// flatDotsAVX2 sets out[i] = dot(q[:dim], x[i*dim:(i+1)*dim]) for i < n.
//
//go:noescape
func flatDotsAVX2(q, x *float32, dim, n int, out *float32)

// flatSumAVX2 returns the sum of x[:n].
//
//go:noescape
func flatSumAVX2(x *float32, n int) float32

// flatDots sets out[i] to the dot product of q with row i of rows.
func flatDots(q, rows, out []float32) {
	if len(out) == 0 {
		return
	}
	if flatAVX2 && len(q) > 0 {
		_ = rows[len(out)*len(q)-1] // bounds check for the assembly
		flatDotsAVX2(&q[0], &rows[0], len(q), len(out), &out[0])
		return
	}
	flatDotsGeneric(q, rows, out)
}

// flatSum is the sum of x; it streams x once (the read-bandwidth benchmark uses it).
func flatSum(x []float32) float32 {
	if flatAVX2 && len(x) > 0 {
		return flatSumAVX2(&x[0], len(x))
	}
	return flatSumGeneric(x)
}
