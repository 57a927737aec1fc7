//go:build race

package store

// raceBuild: the tests run under the race detector, where sync.Pool drops a share of
// what is put back (on purpose, to find misuse), so pooled buffers are remade more often.
const raceBuild = true
