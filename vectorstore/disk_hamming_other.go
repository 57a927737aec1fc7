//go:build !amd64

package vectorstore

// hammingAsm: no kernel here.
var hammingAsm = false

// hammingAVX512: no kernel here.
var hammingAVX512 = false

// hammingGroups: no kernel here.
var hammingGroups = false

// hamming is hammingGeneric here (arm64's popcount needs no feature check).
func hamming(a, b []uint64) int { return hammingGeneric(a, b) }

// hammingDists is hammingDistsGeneric here.
func hammingDists(q, codes []uint64, out []int32) { hammingDistsGeneric(q, codes, out) }
