#include "textflag.h"

// func flatDotsAVX2(q, x *float32, dim, n int, out *float32)
//
// For each of the n rows of x (dim floats each, contiguous) it computes the dot product
// with q: 4 ymm accumulators over 32 floats per step, then 8-float steps, then a scalar
// tail, then a horizontal sum.
TEXT ·flatDotsAVX2(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ dim+16(FP), CX
	MOVQ n+24(FP), BX
	MOVQ out+32(FP), DX
	TESTQ BX, BX
	JLE  dots_done

dots_row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS X8, X8, X8
	MOVQ   DI, R8
	MOVQ   CX, R9

dots_loop32:
	CMPQ        R9, $32
	JLT         dots_loop8
	VMOVUPS     (R8), Y4
	VMOVUPS     32(R8), Y5
	VMOVUPS     64(R8), Y6
	VMOVUPS     96(R8), Y7
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y5, Y1
	VFMADD231PS 64(SI), Y6, Y2
	VFMADD231PS 96(SI), Y7, Y3
	ADDQ        $128, R8
	ADDQ        $128, SI
	SUBQ        $32, R9
	JMP         dots_loop32

dots_loop8:
	CMPQ        R9, $8
	JLT         dots_tail
	VMOVUPS     (R8), Y4
	VFMADD231PS (SI), Y4, Y0
	ADDQ        $32, R8
	ADDQ        $32, SI
	SUBQ        $8, R9
	JMP         dots_loop8

dots_tail:
	TESTQ       R9, R9
	JEQ         dots_reduce
	VMOVSS      (R8), X4
	VFMADD231SS (SI), X4, X8
	ADDQ        $4, R8
	ADDQ        $4, SI
	DECQ        R9
	JMP         dots_tail

dots_reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VADDSS       X8, X0, X0
	VMOVSS       X0, (DX)
	ADDQ         $4, DX
	DECQ         BX
	JNZ          dots_row

dots_done:
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
