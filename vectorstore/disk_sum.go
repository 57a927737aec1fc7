package vectorstore

import "encoding/binary"

// The checksum of a block of a segment file (diskBlock bytes; the last block of a file may
// be shorter). Every block of rows must be checked before a search uses it, and the first
// exact search after an open reads every row: with a CRC-32C a block (1-5 GB/s a core,
// run before the rows were scored) that first search of 1M x 384 took 2.5 times as long.
// This sum is made of vector additions that the exact scan's kernel does on the rows it
// has loaded to score them (diskDotsSum), so checking costs next to nothing there:
//
// The block, zero-padded to a multiple of 64 bytes, is a sequence of T steps of 8
// little-endian uint64 words. Lane j (of 8) keeps, over word j of every step,
//
//	a[j]  the sum of the words (mod 2^64)
//	b[j]  the sum of a[j] after each step (mod 2^64): a word of step t counts T-t times
//	s[j]  the sum of the words' byte sums (what VPSADBW against zero gives; exact)
//	e[j]  the sum of s[j] after each step (exact: under 2^25 for 128 steps)
//
// A change to one word changes its lane's a. A change to two words of one lane leaves a
// and b as they were only if both changes lie in the words' top 5 bits (d1+d2 = 0 and
// (t2-t1)d1 = 0 mod 2^64, t2-t1 < 128); those change the top bytes, which e (exact,
// position-weighted) sees. Each lane's values are folded into two 64-bit values, each
// through its own bijection (diskMix), and summed with the length's (diskFold): one
// changed value always changes the sum; changes to several cancel with a chance of about
// 2^-64.

// diskLanes are the lanes of a block's sum, in the order the kernels store them.
type diskLanes struct {
	a, b, s, e [8]uint64
}

// diskSumLanesGeneric is the portable diskSumLanes: the steps of p (a multiple of 64
// bytes) added to l.
func diskSumLanesGeneric(p []byte, l *diskLanes) {
	for ; len(p) >= 64; p = p[64:] {
		for j := range 8 {
			w := binary.LittleEndian.Uint64(p[8*j:])
			l.a[j] += w
			l.b[j] += l.a[j]
			l.s[j] += diskByteSum(w)
			l.e[j] += l.s[j]
		}
	}
}

// diskByteSum is the sum of the 8 bytes of w.
func diskByteSum(w uint64) uint64 {
	w = w&0x00ff00ff00ff00ff + w>>8&0x00ff00ff00ff00ff
	w = w&0x0000ffff0000ffff + w>>16&0x0000ffff0000ffff
	return w&0xffffffff + w>>32
}

// diskBlockSum is the checksum of a block of at most diskBlock bytes.
func diskBlockSum(p []byte) uint64 {
	var l diskLanes
	diskBlockLanes(p, &l)
	return diskFold(&l, len(p))
}

// diskBlockLanes adds the steps of p, zero-padded to a multiple of 64 bytes, to l.
func diskBlockLanes(p []byte, l *diskLanes) {
	n := len(p) &^ 63
	diskSumLanes(p[:n], l)
	if n < len(p) {
		var tail [64]byte
		copy(tail[:], p[n:])
		diskSumLanesGeneric(tail[:], l)
	}
}

// diskFold is the checksum of a block of n bytes whose lanes are l: per lane, a and b as
// one value (a times an odd constant, plus b) and s and e as another (exact: s < 2^20,
// e < 2^25 for blocks of up to 8 KiB), each through a bijection of its own (diskMix after
// a constant of its own), summed. The 16 mixes are independent of one another (no chain
// through them): this runs once a block on the first scan of every row.
func diskFold(l *diskLanes, n int) uint64 {
	h := diskMix(uint64(n) + 0x6d76_7375_6d73_3032) // "mvsums02"
	for j := range 8 {
		h += diskMix(l.a[j]*0x9e37_79b9_7f4a_7c15 + l.b[j] + diskFoldKeys[j])
		h += diskMix((l.s[j] | l.e[j]<<20) + diskFoldKeys[8+j])
	}
	return h
}

// diskFoldKeys set each value's bijection apart.
var diskFoldKeys = [16]uint64{
	0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344, 0xa409_3822_299f_31d0, 0x082e_fa98_ec4e_6c89,
	0x4528_21e6_38d0_1377, 0xbe54_66cf_34e9_0c6c, 0xc0ac_29b7_c97c_50dd, 0x3f84_d5b5_b547_0917,
	0x9216_d5d9_8979_fb1b, 0xd131_0ba6_98df_b5ac, 0x2ffd_72db_d01a_dfb7, 0xb8e1_afed_6a26_7e96,
	0xba7c_9045_f12c_7f99, 0x24a1_9947_b391_6cf7, 0x0801_f2e2_858e_fc16, 0x6369_20d8_7157_4e69,
}

// diskMix is a bijection of uint64 (xor-shift, odd multiply, xor-shift).
func diskMix(z uint64) uint64 {
	z ^= z >> 32
	z *= 0xd6e8_feb8_6659_fd93
	return z ^ z>>32
}

// diskDotsSumGeneric is the portable diskDotsSum: flatDots, and the lanes of each block of
// the rows' bytes (lanes[k] block k's, the last one short when the rows end inside it).
func diskDotsSumGeneric(q, rows, out []float32, lanes []diskLanes) {
	flatDots(q, rows[:len(out)*len(q)], out)
	b := float32Bytes(rows[:len(out)*len(q)])
	for k := range lanes[:diskBlocks(int64(len(b)))] {
		lanes[k] = diskLanes{}
		diskBlockLanes(b[k*diskBlock:min(len(b), (k+1)*diskBlock)], &lanes[k])
	}
}
