package vectorstore

import "golang.org/x/sys/cpu"

// diskAVX512 selects the AVX-512 forms of the checksum kernels (AVX-512 F and BW, beside
// the AVX2 and FMA of flatAVX2): half the integer operations of the AVX2 ones, which on a
// 2-core Sapphire Rapids machine took the first exact search of 1M x 384 from +7-10 % CPU
// to none. Tests turn it off to exercise the AVX2 ones.
var diskAVX512 = flatAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// diskSumAVX2 and diskSumAVX512 add the steps of the n bytes (a multiple of 64) at p to l
// (diskSumLanesGeneric).
//
//go:noescape
func diskSumAVX2(p *byte, n int, l *diskLanes)

//go:noescape
func diskSumAVX512(p *byte, n int, l *diskLanes)

// diskDotsSumAVX2 and diskDotsSumAVX512 are flatDotsAVX2 over n rows of rowBytes (a
// multiple of 64) at x, the rows contiguous, the scores bit for bit flatDotsAVX2's, with
// the lanes of the rows' bytes on the way: those of every steps 64-byte steps (a block)
// stored at lanes (a diskLanes each), then cleared; those of a last, partial block too.
//
//go:noescape
func diskDotsSumAVX2(q, x *float32, rowBytes, n int, out *float32, lanes *diskLanes, steps int)

//go:noescape
func diskDotsSumAVX512(q, x *float32, rowBytes, n int, out *float32, lanes *diskLanes, steps int)

// diskSumLanes adds the steps of p (a multiple of 64 bytes) to l.
func diskSumLanes(p []byte, l *diskLanes) {
	switch {
	case len(p) == 0:
	case diskAVX512:
		diskSumAVX512(&p[0], len(p), l)
	case flatAVX2:
		diskSumAVX2(&p[0], len(p), l)
	default:
		diskSumLanesGeneric(p, l)
	}
}

// diskFusable reports whether an exact scan of rows of d floats checks their blocks as it
// scores them (diskDotsSum): with AVX2, rows of a multiple of 64 bytes.
func diskFusable(d int) bool { return flatAVX2 && d%16 == 0 }

// diskDotsSum sets out[i] to the dot product of q with row i of rows (flatDots's) and
// lanes[k] to the lanes of block k of the rows' bytes (diskDotsSumGeneric). Only when
// diskFusable(len(q)).
func diskDotsSum(q, rows, out []float32, lanes []diskLanes) {
	if len(out) == 0 {
		return
	}
	d := len(q)
	_ = rows[len(out)*d-1]
	_ = lanes[diskBlocks(int64(4*len(out)*d))-1]
	if diskAVX512 {
		diskDotsSumAVX512(&q[0], &rows[0], 4*d, len(out), &out[0], &lanes[0], diskBlock/64)
		return
	}
	diskDotsSumAVX2(&q[0], &rows[0], 4*d, len(out), &out[0], &lanes[0], diskBlock/64)
}

// diskAVX512Enabled and setDiskAVX512 read and set the AVX-512 selection (tests).
func diskAVX512Enabled() bool { return diskAVX512 }
func setDiskAVX512(on bool)   { diskAVX512 = on }
