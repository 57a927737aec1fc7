//go:build !unix

package vectorstore

import "time"

// diskBenchCPU is 0: no CPU time here.
func diskBenchCPU() time.Duration { return 0 }
