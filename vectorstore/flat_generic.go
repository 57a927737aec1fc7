//go:build !amd64

package vectorstore

// flatAVX2 is always false off amd64: the portable kernels are used.
var flatAVX2 = false

// flatDots sets out[i] to the dot product of q with row i of rows.
func flatDots(q, rows, out []float32) { flatDotsGeneric(q, rows, out) }

// flatTile3 scores three queries against nrows rows (see flatTile3Generic).
func flatTile3(qs, rows []float32, d, nrows int, out []float32, ldo int) {
	flatTile3Generic(qs, rows, d, nrows, out, ldo)
}

// flatSum is the sum of x; it streams x once (the read-bandwidth benchmark uses it).
func flatSum(x []float32) float32 { return flatSumGeneric(x) }
