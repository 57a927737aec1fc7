package searchr1

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// onCPU runs fn on one locked OS thread and returns the CPU time that thread spent in it:
// unlike the wall clock, it does not grow when other processes take the cores. The
// thread's CPU clock (CLOCK_THREAD_CPUTIME_ID) counts in nanoseconds; getrusage's thread
// times, used before, moved in scheduler ticks (4 ms here), so that eight runs on a small
// input read 0 and one on a large input 3.991 ms, and the linear-time check failed on a
// busy machine.
func onCPU(fn func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &a) != nil {
		return wallTime(fn)
	}
	fn()
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &b) != nil {
		return 0
	}
	return time.Duration(b.Nano() - a.Nano())
}
