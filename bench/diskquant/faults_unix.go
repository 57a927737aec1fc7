//go:build unix

package main

import "syscall"

// faults is the page faults of this process so far: minor (a page the system had, mapped
// in) and major (a page read from the disk).
func faults() (minor, major int64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return int64(ru.Minflt), int64(ru.Majflt)
}
