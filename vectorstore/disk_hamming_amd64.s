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

// WORDSETUP splits a row's w words (R8) into BX chunks of eight and a tail of DX words,
// and sets mask K1 to the tail's words.
#define WORDSETUP \
	MOVQ R8, BX; SHRQ $3, BX; MOVQ R8, CX; ANDQ $7, CX; MOVQ CX, DX; \
	MOVQ $1, AX; SHLQ CX, AX; DECQ AX; KMOVW AX, K1

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
	WORDSETUP
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

// COUNT8 counts the bits of Z0-Z7 (eight rows' XORed words) into the rows' lane sums
// Z8-Z15.
#define COUNT8 \
	VPOPCNTQ Z0, Z0; VPOPCNTQ Z1, Z1; VPOPCNTQ Z2, Z2; VPOPCNTQ Z3, Z3; \
	VPOPCNTQ Z4, Z4; VPOPCNTQ Z5, Z5; VPOPCNTQ Z6, Z6; VPOPCNTQ Z7, Z7; \
	VPADDQ Z0, Z8, Z8; VPADDQ Z1, Z9, Z9; VPADDQ Z2, Z10, Z10; VPADDQ Z3, Z11, Z11; \
	VPADDQ Z4, Z12, Z12; VPADDQ Z5, Z13, Z13; VPADDQ Z6, Z14, Z14; VPADDQ Z7, Z15, Z15

// func hammingDists8AVX512(q, codes *uint64, w, groups int, out *int32)
//
// hammingDistsAVX512 for 8*groups rows, eight rows at a time: each row's words are XORed
// with q and counted into its own eight lane sums (Z8-Z15; the last w%8 words through
// mask K1, as there), then the eight rows' lanes are added across in three steps (pairs of
// lanes of two rows side by side, then 128-bit blocks of two pairs of rows, twice), which
// leaves the eight rows' distances in the eight lanes of one register, stored at once.
// Rows 0-3 of a group are read from R10 (the group's current words) and rows 4-7 from R12
// (four rows on), each at 0, 1, 2 or 3 row lengths (R8, R13 = 3 row lengths).
TEXT ·hammingDists8AVX512(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ codes+8(FP), DI
	MOVQ w+16(FP), R8
	MOVQ groups+24(FP), R9
	MOVQ out+32(FP), R11
	WORDSETUP
	SHLQ $3, R8              // a row's bytes
	LEAQ (R8)(R8*2), R13     // three rows' bytes
	MOVQ R8, R14
	SHLQ $3, R14             // eight rows' bytes

group:
	TESTQ  R9, R9
	JZ     gdone
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	VPXORQ Z12, Z12, Z12
	VPXORQ Z13, Z13, Z13
	VPXORQ Z14, Z14, Z14
	VPXORQ Z15, Z15, Z15
	XORQ   CX, CX
	MOVQ   BX, AX

gchunk:
	TESTQ     AX, AX
	JZ        gtail
	LEAQ      (DI)(CX*1), R10
	LEAQ      (R10)(R8*4), R12
	VMOVDQU64 (SI)(CX*1), Z16
	VPXORQ    (R10), Z16, Z0
	VPXORQ    (R10)(R8*1), Z16, Z1
	VPXORQ    (R10)(R8*2), Z16, Z2
	VPXORQ    (R10)(R13*1), Z16, Z3
	VPXORQ    (R12), Z16, Z4
	VPXORQ    (R12)(R8*1), Z16, Z5
	VPXORQ    (R12)(R8*2), Z16, Z6
	VPXORQ    (R12)(R13*1), Z16, Z7
	COUNT8
	ADDQ      $64, CX
	DECQ      AX
	JMP       gchunk

gtail:
	TESTQ       DX, DX
	JZ          greduce
	LEAQ        (DI)(CX*1), R10
	LEAQ        (R10)(R8*4), R12
	VMOVDQU64.Z (SI)(CX*1), K1, Z16
	VMOVDQU64.Z (R10), K1, Z0
	VMOVDQU64.Z (R10)(R8*1), K1, Z1
	VMOVDQU64.Z (R10)(R8*2), K1, Z2
	VMOVDQU64.Z (R10)(R13*1), K1, Z3
	VMOVDQU64.Z (R12), K1, Z4
	VMOVDQU64.Z (R12)(R8*1), K1, Z5
	VMOVDQU64.Z (R12)(R8*2), K1, Z6
	VMOVDQU64.Z (R12)(R13*1), K1, Z7
	VPXORQ      Z16, Z0, Z0
	VPXORQ      Z16, Z1, Z1
	VPXORQ      Z16, Z2, Z2
	VPXORQ      Z16, Z3, Z3
	VPXORQ      Z16, Z4, Z4
	VPXORQ      Z16, Z5, Z5
	VPXORQ      Z16, Z6, Z6
	VPXORQ      Z16, Z7, Z7
	COUNT8

greduce:
	// Rows side by side: each 128-bit block of Z0 holds (row 0, row 1) partial sums, of
	// Z2 (row 2, row 3), Z4 (4, 5), Z6 (6, 7).
	VPUNPCKLQDQ Z9, Z8, Z0
	VPUNPCKHQDQ Z9, Z8, Z1
	VPADDQ      Z1, Z0, Z0
	VPUNPCKLQDQ Z11, Z10, Z2
	VPUNPCKHQDQ Z11, Z10, Z3
	VPADDQ      Z3, Z2, Z2
	VPUNPCKLQDQ Z13, Z12, Z4
	VPUNPCKHQDQ Z13, Z12, Z5
	VPADDQ      Z5, Z4, Z4
	VPUNPCKLQDQ Z15, Z14, Z6
	VPUNPCKHQDQ Z15, Z14, Z7
	VPADDQ      Z7, Z6, Z6
	// Blocks 0+1 and 2+3 of two registers: Z0 holds rows (0,1) (0,1) (2,3) (2,3).
	VSHUFI64X2  $0x88, Z2, Z0, Z1
	VSHUFI64X2  $0xdd, Z2, Z0, Z3
	VPADDQ      Z3, Z1, Z0
	VSHUFI64X2  $0x88, Z6, Z4, Z5
	VSHUFI64X2  $0xdd, Z6, Z4, Z7
	VPADDQ      Z7, Z5, Z4
	// Again: rows 0, 1, ..., 7 in the eight lanes.
	VSHUFI64X2  $0x88, Z4, Z0, Z1
	VSHUFI64X2  $0xdd, Z4, Z0, Z3
	VPADDQ      Z3, Z1, Z0
	VPMOVQD     Z0, Y0
	VMOVDQU     Y0, (R11)
	ADDQ        $32, R11
	ADDQ        R14, DI
	DECQ        R9
	JMP         group

gdone:
	VZEROUPPER
	RET
