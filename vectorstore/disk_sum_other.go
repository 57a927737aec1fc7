//go:build !amd64

package vectorstore

// diskSumLanes adds the steps of p (a multiple of 64 bytes) to l.
func diskSumLanes(p []byte, l *diskLanes) { diskSumLanesGeneric(p, l) }

// diskFusable reports whether an exact scan of rows of d floats checks their blocks as it
// scores them: only with the amd64 kernels (elsewhere the blocks are checked first, then
// scanned).
func diskFusable(int) bool { return false }

// diskDotsSum is diskDotsSumGeneric here.
func diskDotsSum(q, rows, out []float32, lanes []diskLanes) { diskDotsSumGeneric(q, rows, out, lanes) }

// diskAVX512Enabled and setDiskAVX512: no AVX-512 kernels here.
func diskAVX512Enabled() bool { return false }
func setDiskAVX512(bool)      {}
