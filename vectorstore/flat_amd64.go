package vectorstore

import "golang.org/x/sys/cpu"

// flatAVX2 selects the AVX2+FMA kernels; tests turn it off to exercise the portable ones.
var flatAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// flatDotsAVX2 sets out[i] to the main part (the first d8 floats, d8 a multiple of 8) of
// dot(q, row i) for i < n, row i starting stride floats after row i-1 at x.
//
//go:noescape
func flatDotsAVX2(q, x *float32, d8, stride, n int, out *float32)

// flatTileAVX2 sets out[a*ldo+r] to the main part (first d8 floats) of dot(query a, row r)
// for the three queries at q, q+qstride, q+2*qstride and the 2*groups rows at x, xstride
// floats apart.
//
//go:noescape
func flatTileAVX2(q *float32, qstride int, x *float32, xstride, groups, d8 int, out *float32, ldo int)

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
		d := len(q)
		_ = rows[len(out)*d-1] // bounds check for the assembly
		d8 := d &^ 7
		flatDotsAVX2(&q[0], &rows[0], d8, d, len(out), &out[0])
		if d8 < d {
			for i := range out {
				out[i] += flatTail(q[d8:], rows[i*d+d8:(i+1)*d])
			}
		}
		return
	}
	flatDotsGeneric(q, rows, out)
}

// flatTile3 scores three queries (qs holds them contiguously, d floats each) against the
// nrows rows of rows, writing query a's scores to out[a*ldo : a*ldo+nrows]. rows must hold
// nrows rounded up to an even number of rows (the padding row's score lands in out past
// nrows, so ldo must be at least that even number). Every score equals,
// bit for bit, what flatDots computes for the same query and row.
func flatTile3(qs, rows []float32, d, nrows int, out []float32, ldo int) {
	if nrows == 0 {
		return
	}
	if flatAVX2 {
		groups := (nrows + 1) / 2
		_ = qs[3*d-1]
		_ = rows[groups*2*d-1]
		_ = out[2*ldo+groups*2-1]
		d8 := d &^ 7
		flatTileAVX2(&qs[0], d, &rows[0], d, groups, d8, &out[0], ldo)
		if d8 < d {
			for a := range 3 {
				q := qs[a*d+d8 : (a+1)*d]
				o := out[a*ldo : a*ldo+nrows]
				for r := range o {
					o[r] += flatTail(q, rows[r*d+d8:(r+1)*d])
				}
			}
		}
		return
	}
	flatTile3Generic(qs, rows, d, nrows, out, ldo)
}

// flatSum is the sum of x; it streams x once (the read-bandwidth benchmark uses it).
func flatSum(x []float32) float32 {
	if flatAVX2 && len(x) > 0 {
		return flatSumAVX2(&x[0], len(x))
	}
	return flatSumGeneric(x)
}
