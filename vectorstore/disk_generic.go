//go:build !amd64

package vectorstore

// dotInt8Q is the dot product of the integer query qi with an int8 code.
func dotInt8Q(qi []int16, c []int8) int32 { return dotInt8QGeneric(qi, c) }
