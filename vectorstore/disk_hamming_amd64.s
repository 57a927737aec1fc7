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

// func hammingDistsAVX512(q, codes *uint64, w, n int, out *int32)
//
// The Hamming distance to the w words at q of each of n rows of w words at codes (one
// after another), to out[0..n). A row is XORed with q, counted with VPOPCNTQ (AVX-512
// VPOPCNTDQ) eight words at a time into eight lane sums (the last w%8 words through mask
// K1, which also keeps the loads within the row and q), and the lanes added.
TEXT ·hammingDistsAVX512(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ codes+8(FP), DI
	MOVQ w+16(FP), R8
	MOVQ n+24(FP), R9
	MOVQ out+32(FP), R11
	MOVQ R8, BX
	SHRQ $3, BX
	MOVQ R8, CX
	ANDQ $7, CX
	MOVQ CX, DX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1
	SHLQ $3, R8
	XORQ R12, R12

drow:
	CMPQ R12, R9
	JGE  ddone
	VPXORQ Z1, Z1, Z1
	XORQ   CX, CX
	MOVQ   BX, AX

dchunk:
	TESTQ     AX, AX
	JZ        dtail
	VMOVDQU64 (DI)(CX*1), Z0
	VPXORQ    (SI)(CX*1), Z0, Z0
	VPOPCNTQ  Z0, Z0
	VPADDQ    Z0, Z1, Z1
	ADDQ      $64, CX
	DECQ      AX
	JMP       dchunk

dtail:
	TESTQ       DX, DX
	JZ          dreduce
	VMOVDQU64.Z (DI)(CX*1), K1, Z0
	VMOVDQU64.Z (SI)(CX*1), K1, Z2
	VPXORQ      Z2, Z0, Z0
	VPOPCNTQ    Z0, Z0
	VPADDQ      Z0, Z1, Z1

dreduce:
	VEXTRACTI64X4 $1, Z1, Y2
	VPADDQ        Y2, Y1, Y1
	VEXTRACTI128  $1, Y1, X2
	VPADDQ        X2, X1, X1
	VPSHUFD       $0x4e, X1, X2
	VPADDQ        X2, X1, X1
	VMOVQ         X1, AX
	MOVL          AX, (R11)(R12*4)
	ADDQ          R8, DI
	INCQ          R12
	JMP           drow

ddone:
	VZEROUPPER
	RET
