package vectorstore

import "testing"

// UseGenericKernel switches the flat kernels to portable Go for t's duration (for the
// conformance tests, which run outside the package).
func UseGenericKernel(t *testing.T) { useGenericKernel(t, true) }
