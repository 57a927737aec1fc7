#include "textflag.h"

// The checksum kernels of disk_sum.go. Each 64-byte step is 8 uint64 words w (lane j: word
// j); a += w, b += a, s += byte sums of w (VPSADBW against zero), e += s. A diskLanes is
// a, b, s, e: 8 uint64 each, at offsets 0, 64, 128, 192. Each loop prefetches 1 KiB
// ahead: they are the first to read rows after an open, and the extra integer work per
// byte otherwise leaves fewer loads in flight (with it, the first exact search of 1M x 384
// used no more CPU than before checksums; without it, 7-17 % more).

// func diskSumAVX2(p *byte, n int, l *diskLanes)
//
// The steps of the n bytes (a multiple of 64) at p added to *l; lanes 0-3 in the low
// register of each pair, 4-7 in the high one.
TEXT ·diskSumAVX2(SB), NOSPLIT, $0-24
	MOVQ    p+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVQ    l+16(FP), DI
	VMOVDQU (DI), Y0
	VMOVDQU 32(DI), Y1
	VMOVDQU 64(DI), Y2
	VMOVDQU 96(DI), Y3
	VMOVDQU 128(DI), Y4
	VMOVDQU 160(DI), Y5
	VMOVDQU 192(DI), Y6
	VMOVDQU 224(DI), Y7
	VPXOR   Y15, Y15, Y15
	SHRQ    $6, CX
	JZ      sum2_done

sum2_loop:
	PREFETCHT0 1024(SI)
	VMOVDQU (SI), Y8
	VMOVDQU 32(SI), Y9
	VPSADBW Y15, Y8, Y10
	VPSADBW Y15, Y9, Y11
	VPADDQ  Y8, Y0, Y0
	VPADDQ  Y9, Y1, Y1
	VPADDQ  Y10, Y4, Y4
	VPADDQ  Y11, Y5, Y5
	VPADDQ  Y0, Y2, Y2
	VPADDQ  Y1, Y3, Y3
	VPADDQ  Y4, Y6, Y6
	VPADDQ  Y5, Y7, Y7
	ADDQ    $64, SI
	DECQ    CX
	JNZ     sum2_loop

sum2_done:
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	VMOVDQU Y4, 128(DI)
	VMOVDQU Y5, 160(DI)
	VMOVDQU Y6, 192(DI)
	VMOVDQU Y7, 224(DI)
	VZEROUPPER
	RET

// func diskSumAVX512(p *byte, n int, l *diskLanes)
//
// diskSumAVX2 with each of a, b, s, e in one zmm register.
TEXT ·diskSumAVX512(SB), NOSPLIT, $0-24
	MOVQ      p+0(FP), SI
	MOVQ      n+8(FP), CX
	MOVQ      l+16(FP), DI
	VMOVDQU64 (DI), Z0
	VMOVDQU64 64(DI), Z1
	VMOVDQU64 128(DI), Z2
	VMOVDQU64 192(DI), Z3
	VPXORQ    Z15, Z15, Z15
	SHRQ      $6, CX
	JZ        sum5_done

sum5_loop:
	PREFETCHT0 1024(SI)
	VMOVDQU64 (SI), Z8
	VPSADBW   Z15, Z8, Z10
	VPADDQ    Z8, Z0, Z0
	VPADDQ    Z10, Z2, Z2
	VPADDQ    Z0, Z1, Z1
	VPADDQ    Z2, Z3, Z3
	ADDQ      $64, SI
	DECQ      CX
	JNZ       sum5_loop

sum5_done:
	VMOVDQU64 Z0, (DI)
	VMOVDQU64 Z1, 64(DI)
	VMOVDQU64 Z2, 128(DI)
	VMOVDQU64 Z3, 192(DI)
	VZEROUPPER
	RET

// func diskDotsSumAVX2(q, x *float32, rowBytes, n int, out *float32, lanes *diskLanes, steps int)
//
// flatDotsAVX2 (rows of rowBytes, a multiple of 64, contiguous) with the lanes of the rows'
// bytes: the same chunks FMA'd into the same two accumulators (Y0: even chunks, Y1: odd)
// and reduced the same way, so the scores are flatDotsAVX2's bit for bit; each chunk, once
// loaded, also goes into the lanes (a: Y8/Y9, b: Y10/Y11, s: Y12/Y13, e: Y2/Y3). After
// every steps steps the lanes are stored at lanes and cleared; a last, partial block's are
// stored at the end.
TEXT ·diskDotsSumAVX2(SB), NOSPLIT, $0-56
	MOVQ  q+0(FP), DI
	MOVQ  x+8(FP), SI
	MOVQ  rowBytes+16(FP), CX
	MOVQ  n+24(FP), BX
	MOVQ  out+32(FP), DX
	MOVQ  lanes+40(FP), R8
	MOVQ  steps+48(FP), R9
	MOVQ  R9, R10
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	VPXOR Y12, Y12, Y12
	VPXOR Y13, Y13, Y13
	VPXOR Y15, Y15, Y15

ds2_row:
	TESTQ  BX, BX
	JEQ    ds2_done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX

ds2_loop:
	PREFETCHT0  1024(SI)(AX*1)
	VMOVUPS     (SI)(AX*1), Y6
	VMOVUPS     32(SI)(AX*1), Y7
	VFMADD231PS (DI)(AX*1), Y6, Y0
	VFMADD231PS 32(DI)(AX*1), Y7, Y1
	VPSADBW     Y15, Y6, Y4
	VPSADBW     Y15, Y7, Y5
	VPADDQ      Y6, Y8, Y8
	VPADDQ      Y7, Y9, Y9
	VPADDQ      Y4, Y12, Y12
	VPADDQ      Y5, Y13, Y13
	VPADDQ      Y8, Y10, Y10
	VPADDQ      Y9, Y11, Y11
	VPADDQ      Y12, Y2, Y2
	VPADDQ      Y13, Y3, Y3
	ADDQ        $64, AX
	DECQ        R10
	JNZ         ds2_next
	VMOVDQU     Y8, (R8)
	VMOVDQU     Y9, 32(R8)
	VMOVDQU     Y10, 64(R8)
	VMOVDQU     Y11, 96(R8)
	VMOVDQU     Y12, 128(R8)
	VMOVDQU     Y13, 160(R8)
	VMOVDQU     Y2, 192(R8)
	VMOVDQU     Y3, 224(R8)
	VPXOR       Y2, Y2, Y2
	VPXOR       Y3, Y3, Y3
	VPXOR       Y8, Y8, Y8
	VPXOR       Y9, Y9, Y9
	VPXOR       Y10, Y10, Y10
	VPXOR       Y11, Y11, Y11
	VPXOR       Y12, Y12, Y12
	VPXOR       Y13, Y13, Y13
	ADDQ        $256, R8
	MOVQ        R9, R10

ds2_next:
	CMPQ         AX, CX
	JLT          ds2_loop
	VADDPS       Y1, Y0, Y0
	VHADDPS      Y0, Y0, Y0
	VHADDPS      Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (DX)
	ADDQ         $4, DX
	ADDQ         CX, SI
	DECQ         BX
	JMP          ds2_row

ds2_done:
	CMPQ    R10, R9
	JEQ     ds2_ret
	VMOVDQU Y8, (R8)
	VMOVDQU Y9, 32(R8)
	VMOVDQU Y10, 64(R8)
	VMOVDQU Y11, 96(R8)
	VMOVDQU Y12, 128(R8)
	VMOVDQU Y13, 160(R8)
	VMOVDQU Y2, 192(R8)
	VMOVDQU Y3, 224(R8)

ds2_ret:
	VZEROUPPER
	RET

// func diskDotsSumAVX512(q, x *float32, rowBytes, n int, out *float32, lanes *diskLanes, steps int)
//
// diskDotsSumAVX2 with the lanes in zmm registers (a: Z8, b: Z10, s: Z11, e: Z13): half the
// integer operations. The scores are still computed on ymm halves, as flatDotsAVX2 does
// (the step's second half loaded again, from L1).
TEXT ·diskDotsSumAVX512(SB), NOSPLIT, $0-56
	MOVQ   q+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   rowBytes+16(FP), CX
	MOVQ   n+24(FP), BX
	MOVQ   out+32(FP), DX
	MOVQ   lanes+40(FP), R8
	MOVQ   steps+48(FP), R9
	MOVQ   R9, R10
	VPXORQ Z8, Z8, Z8
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	VPXORQ Z13, Z13, Z13
	VPXORQ Z15, Z15, Z15

ds5_row:
	TESTQ  BX, BX
	JEQ    ds5_done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX

ds5_loop:
	PREFETCHT0  1024(SI)(AX*1)
	VMOVDQU64   (SI)(AX*1), Z6
	VMOVUPS     32(SI)(AX*1), Y7
	VFMADD231PS (DI)(AX*1), Y6, Y0
	VFMADD231PS 32(DI)(AX*1), Y7, Y1
	VPSADBW     Z15, Z6, Z12
	VPADDQ      Z6, Z8, Z8
	VPADDQ      Z12, Z11, Z11
	VPADDQ      Z8, Z10, Z10
	VPADDQ      Z11, Z13, Z13
	ADDQ        $64, AX
	DECQ        R10
	JNZ         ds5_next
	VMOVDQU64   Z8, (R8)
	VMOVDQU64   Z10, 64(R8)
	VMOVDQU64   Z11, 128(R8)
	VMOVDQU64   Z13, 192(R8)
	VPXORQ      Z8, Z8, Z8
	VPXORQ      Z10, Z10, Z10
	VPXORQ      Z11, Z11, Z11
	VPXORQ      Z13, Z13, Z13
	ADDQ        $256, R8
	MOVQ        R9, R10

ds5_next:
	CMPQ         AX, CX
	JLT          ds5_loop
	VADDPS       Y1, Y0, Y0
	VHADDPS      Y0, Y0, Y0
	VHADDPS      Y0, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (DX)
	ADDQ         $4, DX
	ADDQ         CX, SI
	DECQ         BX
	JMP          ds5_row

ds5_done:
	CMPQ      R10, R9
	JEQ       ds5_ret
	VMOVDQU64 Z8, (R8)
	VMOVDQU64 Z10, 64(R8)
	VMOVDQU64 Z11, 128(R8)
	VMOVDQU64 Z13, 192(R8)

ds5_ret:
	VZEROUPPER
	RET
