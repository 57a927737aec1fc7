//go:build !unix

package memory

// lockHolder cannot tell readers from a writer on this platform.
func lockHolder(string) string { return "a writer or read-only readers" }
