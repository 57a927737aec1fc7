package vectorstore

import "golang.org/x/sys/cpu"

// hammingAsm selects the POPCNT kernel; tests turn it off to exercise the portable one.
var hammingAsm = cpu.X86.HasPOPCNT

// hammingPOPCNT returns the number of bits in which the n words at a and b differ.
//
//go:noescape
func hammingPOPCNT(a, b *uint64, n int) int

// hamming is the number of bits in which codes a and b (of one length) differ.
func hamming(a, b []uint64) int {
	if hammingAsm && len(b) > 0 {
		a = a[:len(b)]
		return hammingPOPCNT(&a[0], &b[0], len(b))
	}
	return hammingGeneric(a, b)
}
