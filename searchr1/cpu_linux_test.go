package searchr1

import (
	"runtime"
	"syscall"
	"time"
)

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage.
const rusageThread = 1

// onCPU runs fn on one locked OS thread and returns the CPU time that thread spent in it:
// unlike the wall clock, it does not grow when other processes take the cores.
func onCPU(fn func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b syscall.Rusage
	if syscall.Getrusage(rusageThread, &a) != nil {
		return wallTime(fn)
	}
	fn()
	if syscall.Getrusage(rusageThread, &b) != nil {
		return 0
	}
	return time.Duration(b.Utime.Nano() + b.Stime.Nano() - a.Utime.Nano() - a.Stime.Nano())
}
