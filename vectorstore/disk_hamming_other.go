//go:build !amd64

package vectorstore

// hammingAsm: no kernel here.
var hammingAsm = false

// hamming is hammingGeneric here (arm64's popcount needs no feature check).
func hamming(a, b []uint64) int { return hammingGeneric(a, b) }
