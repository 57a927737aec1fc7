package vectorstore

import "golang.org/x/sys/unix"

// diskMemBytes is the machine's physical memory (0: unknown).
func diskMemBytes() uint64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
