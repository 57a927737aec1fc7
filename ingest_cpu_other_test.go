//go:build !unix

package memory

// cpuSeconds is 0 where getrusage is not available.
func cpuSeconds() float64 { return 0 }
