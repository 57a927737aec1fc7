package vectorstore

// diskDotInt8AVX2 is the dot product of n (a multiple of 16) int16 query values with int8
// codes.
//
//go:noescape
func diskDotInt8AVX2(q *int16, c *int8, n int) int32

// dotInt8Q is the dot product of the integer query qi with an int8 code.
func dotInt8Q(qi []int16, c []int8) int32 {
	c = c[:len(qi)]
	n16 := len(qi) &^ 15
	if !flatAVX2 || n16 == 0 {
		return dotInt8QGeneric(qi, c)
	}
	s := diskDotInt8AVX2(&qi[0], &c[0], n16)
	return s + dotInt8QGeneric(qi[n16:], c[n16:])
}
