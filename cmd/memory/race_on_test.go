//go:build race

package main

// raceBuild: the tests run under the race detector, which keeps shadow memory beside the
// heap (Go's documentation: 5-10x the memory), so a process's peak resident set is larger.
const raceBuild = true
