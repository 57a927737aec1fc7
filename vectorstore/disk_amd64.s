#include "textflag.h"

// func diskDotInt8AVX2(q *int16, c *int8, n int) int32
//
// The dot product of n int16 query values with n int8 codes (n a multiple of 16): 16 codes
// at a time sign-extended to int16 (VPMOVSXBW), multiplied and summed in pairs into int32
// lanes (VPMADDWD), two accumulators, then the lanes summed.
TEXT ·diskDotInt8AVX2(SB), NOSPLIT, $0-28
	MOVQ q+0(FP), SI
	MOVQ c+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y3, Y3, Y3

loop32:
	CMPQ CX, $32
	JL   tail16
	VPMOVSXBW (DI), Y1
	VPMADDWD  (SI), Y1, Y1
	VPADDD    Y1, Y0, Y0
	VPMOVSXBW 16(DI), Y2
	VPMADDWD  32(SI), Y2, Y2
	VPADDD    Y2, Y3, Y3
	ADDQ      $32, DI
	ADDQ      $64, SI
	SUBQ      $32, CX
	JMP       loop32

tail16:
	CMPQ      CX, $16
	JL        done
	VPMOVSXBW (DI), Y1
	VPMADDWD  (SI), Y1, Y1
	VPADDD    Y1, Y0, Y0

done:
	VPADDD       Y3, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	VZEROUPPER
	MOVL         AX, ret+24(FP)
	RET
