package vectorstore

import "golang.org/x/sys/cpu"

// hammingAsm selects the POPCNT kernel; tests turn it off to exercise the portable one.
var hammingAsm = cpu.X86.HasPOPCNT

// hammingAVX512 selects the AVX-512 kernel of hammingDists (VPOPCNTDQ: Intel since Ice
// Lake, AMD since Zen 4); tests turn it off to exercise the portable one.
var hammingAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VPOPCNTDQ

// hammingGroups has the AVX-512 kernel count eight rows at a time (hammingDists8AVX512);
// benchmarks turn it off to measure the row-at-a-time kernel beside it.
var hammingGroups = true

// hammingPOPCNT returns the number of bits in which the n words at a and b differ.
//
//go:noescape
func hammingPOPCNT(a, b *uint64, n int) int

//go:noescape
func hammingDistsAVX512(q, codes *uint64, w, n int, out *int32)

//go:noescape
func hammingDists8AVX512(q, codes *uint64, w, groups int, out *int32)

// hamming is the number of bits in which codes a and b (of one length) differ.
func hamming(a, b []uint64) int {
	if hammingAsm && len(b) > 0 {
		a = a[:len(b)]
		return hammingPOPCNT(&a[0], &b[0], len(b))
	}
	return hammingGeneric(a, b)
}

// hammingDists writes to out[r] the Hamming distance to q of row r of codes (rows of
// len(q) words; len(out) at least their number).
func hammingDists(q, codes []uint64, out []int32) {
	W := len(q)
	n := len(codes) / max(W, 1)
	if hammingAVX512 && n > 0 && W > 0 {
		_ = out[n-1]
		g := n / 8 // eight rows at a time, then the rest a row at a time
		if !hammingGroups {
			g = 0
		}
		if g > 0 {
			hammingDists8AVX512(&q[0], &codes[0], W, g, &out[0])
		}
		if r := 8 * g; r < n {
			hammingDistsAVX512(&q[0], &codes[r*W], W, n-r, &out[r])
		}
		return
	}
	hammingDistsGeneric(q, codes, out)
}
