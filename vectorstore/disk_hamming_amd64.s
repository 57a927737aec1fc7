#include "textflag.h"

// func hammingPOPCNT(a, b *uint64, n int) int
//
// The number of bits in which the n words at a and b differ: XOR, POPCNT, four words a
// step into two accumulators (POPCNT's destination is its source, which has no false
// dependency on an earlier value of the register), then the remaining words.
TEXT ·hammingPOPCNT(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	XORQ AX, AX
	XORQ DX, DX

loop4:
	CMPQ    CX, $4
	JL      tail
	MOVQ    (SI), R8
	XORQ    (DI), R8
	POPCNTQ R8, R8
	ADDQ    R8, AX
	MOVQ    8(SI), R9
	XORQ    8(DI), R9
	POPCNTQ R9, R9
	ADDQ    R9, DX
	MOVQ    16(SI), R10
	XORQ    16(DI), R10
	POPCNTQ R10, R10
	ADDQ    R10, AX
	MOVQ    24(SI), R11
	XORQ    24(DI), R11
	POPCNTQ R11, R11
	ADDQ    R11, DX
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $4, CX
	JMP     loop4

tail:
	TESTQ   CX, CX
	JZ      done
	MOVQ    (SI), R8
	XORQ    (DI), R8
	POPCNTQ R8, R8
	ADDQ    R8, AX
	ADDQ    $8, SI
	ADDQ    $8, DI
	DECQ    CX
	JMP     tail

done:
	ADDQ DX, AX
	MOVQ AX, ret+24(FP)
	RET
