#include "textflag.h"

// The dot-product kernels below all compute the "main part" of a dot product the same way,
// so that a batch search scores every (query, row) pair bit for bit as a single search does.
// Over the first d8 floats (d8 a multiple of 8), 8-float chunk c is fused-multiply-added
// into accumulator c%2 of the pair (two 8-lane accumulators, A and B); then A+B, and its
// lanes summed as ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)) with VHADDPS. The last dim-d8
// floats are added by the Go caller (flatTail).

// func flatDotsAVX2(q, x *float32, d8, stride, n int, out *float32)
//
// out[i] = main part of dot(q, row i) for i < n, row i at x + i*stride floats. One row at a
// time, read in address order (what the hardware prefetcher streams best), two rows'
// chains interleaved.
TEXT ·flatDotsAVX2(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ d8+16(FP), CX
	SHLQ $2, CX                // main part in bytes
	MOVQ CX, R9
	ANDQ $-64, R9              // the part done 16 floats at a time
	MOVQ stride+24(FP), R10
	SHLQ $2, R10               // row stride in bytes
	MOVQ n+32(FP), BX
	MOVQ out+40(FP), DX

dots_row:
	TESTQ  BX, BX
	JEQ    dots_done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX

dots_loop16:
	CMPQ        AX, R9
	JGE         dots_tail8
	VMOVUPS     (DI)(AX*1), Y4
	VMOVUPS     32(DI)(AX*1), Y5
	VFMADD231PS (SI)(AX*1), Y4, Y0
	VFMADD231PS 32(SI)(AX*1), Y5, Y1
	ADDQ        $64, AX
	JMP         dots_loop16

dots_tail8:
	CMPQ        AX, CX
	JGE         dots_reduce
	VMOVUPS     (DI)(AX*1), Y4
	VFMADD231PS (SI)(AX*1), Y4, Y0

dots_reduce:
	VADDPS       Y1, Y0, Y0
	VHADDPS      Y0, Y0, Y0
	VHADDPS      Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (DX)
	ADDQ         $4, DX
	ADDQ         R10, SI
	DECQ         BX
	JMP          dots_row

dots_done:
	VZEROUPPER
	RET

// func flatTileAVX2(q *float32, qstride int, x *float32, xstride, groups, d8 int, out *float32, ldo int)
//
// The register-blocked kernel of the batch search: three queries (at q, q+qstride,
// q+2*qstride floats) against 2*groups rows (row r at x + r*xstride floats), two rows at a
// time with twelve accumulators (Y0-Y11: query a, row r, chunk parity p in Y(4a+2r+p)), the
// three query chunks in Y12-Y14 and each row chunk in Y15, so that every row load feeds three
// FMAs. The three query vectors stay in L1 while the rows stream past. Writes the main part of
// dot(query a, row r) to out[a*ldo + r].
TEXT ·flatTileAVX2(SB), NOSPLIT, $0-64
	MOVQ q+0(FP), DI
	MOVQ qstride+8(FP), R8
	SHLQ $2, R8
	LEAQ (DI)(R8*1), R9        // query 1
	LEAQ (R9)(R8*1), R8        // query 2
	MOVQ x+16(FP), SI
	MOVQ xstride+24(FP), R10
	SHLQ $2, R10               // row stride in bytes
	MOVQ groups+32(FP), BX
	MOVQ d8+40(FP), CX
	SHLQ $2, CX                // main part in bytes
	MOVQ CX, R12
	ANDQ $-64, R12             // the part done 16 floats at a time
	MOVQ out+48(FP), DX
	MOVQ ldo+56(FP), R14
	SHLQ $2, R14               // output row stride in bytes

tile_group:
	TESTQ  BX, BX
	JEQ    tile_done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	LEAQ   (SI)(R10*1), R11
	XORQ   AX, AX

tile_loop16:
	CMPQ        AX, R12
	JGE         tile_tail8
	VMOVUPS     (DI)(AX*1), Y12
	VMOVUPS     (R9)(AX*1), Y13
	VMOVUPS     (R8)(AX*1), Y14
	VMOVUPS     (SI)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS     (R11)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y2
	VFMADD231PS Y15, Y13, Y6
	VFMADD231PS Y15, Y14, Y10
	VMOVUPS     32(DI)(AX*1), Y12
	VMOVUPS     32(R9)(AX*1), Y13
	VMOVUPS     32(R8)(AX*1), Y14
	VMOVUPS     32(SI)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y1
	VFMADD231PS Y15, Y13, Y5
	VFMADD231PS Y15, Y14, Y9
	VMOVUPS     32(R11)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y3
	VFMADD231PS Y15, Y13, Y7
	VFMADD231PS Y15, Y14, Y11
	ADDQ        $64, AX
	JMP         tile_loop16

tile_tail8:
	CMPQ        AX, CX
	JGE         tile_reduce
	VMOVUPS     (DI)(AX*1), Y12
	VMOVUPS     (R9)(AX*1), Y13
	VMOVUPS     (R8)(AX*1), Y14
	VMOVUPS     (SI)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y0
	VFMADD231PS Y15, Y13, Y4
	VFMADD231PS Y15, Y14, Y8
	VMOVUPS     (R11)(AX*1), Y15
	VFMADD231PS Y15, Y12, Y2
	VFMADD231PS Y15, Y13, Y6
	VFMADD231PS Y15, Y14, Y10

tile_reduce:
	VADDPS       Y1, Y0, Y0    // query 0: row 0 in Y0, row 1 in Y2
	VADDPS       Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VHADDPS      Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVSD       X0, (DX)
	VADDPS       Y5, Y4, Y4    // query 1
	VADDPS       Y7, Y6, Y6
	VHADDPS      Y6, Y4, Y4
	VHADDPS      Y4, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPS       X5, X4, X4
	VMOVSD       X4, (DX)(R14*1)
	VADDPS       Y9, Y8, Y8    // query 2
	VADDPS       Y11, Y10, Y10
	VHADDPS      Y10, Y8, Y8
	VHADDPS      Y8, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPS       X9, X8, X8
	VMOVSD       X8, (DX)(R14*2)
	ADDQ         $8, DX
	LEAQ         (R11)(R10*1), SI
	DECQ         BX
	JMP          tile_group

tile_done:
	VZEROUPPER
	RET

// func flatSumAVX2(x *float32, n int) float32
//
// Streams x once with 8 ymm accumulators (64 floats per step): the read-bandwidth probe.
TEXT ·flatSumAVX2(SB), NOSPLIT, $0-20
	MOVQ   x+0(FP), SI
	MOVQ   n+8(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

sum_loop64:
	CMPQ   CX, $64
	JLT    sum_tail
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	VADDPS 128(SI), Y4, Y4
	VADDPS 160(SI), Y5, Y5
	VADDPS 192(SI), Y6, Y6
	VADDPS 224(SI), Y7, Y7
	ADDQ   $256, SI
	SUBQ   $64, CX
	JMP    sum_loop64

sum_tail:
	VXORPS X8, X8, X8

sum_tail_loop:
	TESTQ  CX, CX
	JEQ    sum_reduce
	VADDSS (SI), X8, X8
	ADDQ   $4, SI
	DECQ   CX
	JMP    sum_tail_loop

sum_reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y5, Y4, Y4
	VADDPS       Y7, Y6, Y6
	VADDPS       Y2, Y0, Y0
	VADDPS       Y6, Y4, Y4
	VADDPS       Y4, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VADDSS       X8, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET
