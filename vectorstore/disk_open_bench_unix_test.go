//go:build unix

package vectorstore

import (
	"syscall"
	"time"
)

// diskBenchCPU is the CPU time (user and system) this process has used.
func diskBenchCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
