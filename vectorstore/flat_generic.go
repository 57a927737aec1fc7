//go:build !amd64

package vectorstore

// flatAVX2 is always false off amd64: the portable kernels are used.
var flatAVX2 = false

// flatDots sets out[i] to the dot product of q with row i of rows.
func flatDots(q, rows, out []float32) { flatDotsGeneric(q, rows, out) }

// flatSum is the sum of x; it streams x once (the read-bandwidth benchmark uses it).
func flatSum(x []float32) float32 { return flatSumGeneric(x) }
