//go:build !linux

package searchr1

import "time"

// onCPU runs fn and returns its wall time (a thread's CPU time is read on Linux only).
func onCPU(fn func()) time.Duration { return wallTime(fn) }
