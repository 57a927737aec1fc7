// Package smaps reads /proc/self/smaps (Linux): how much of the files a process maps is
// resident, and how a mapping was advised. Tests use it to check that dropping a mapping's
// pages took effect, and what the kernel was asked for a mapping.
package smaps

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// scan reads /proc/self/smaps: header is called with the fields of each mapping's header
// line ("lo-hi perms offset dev inode [path]") and says whether that mapping's field lines
// ("Name: values") are wanted; field is called with the fields of each wanted one.
func scan(header func(fields []string) bool, field func(fields []string) error) error {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return err
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			in = header(fields)
		case in && len(fields) > 0:
			if err := field(fields); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

// ResidentKB returns the resident kB of this process's mappings of the files whose path
// match accepts.
func ResidentKB(match func(path string) bool) (int, error) {
	kb := 0
	err := scan(func(h []string) bool { return len(h) >= 6 && match(h[len(h)-1]) }, func(f []string) error {
		if f[0] != "Rss:" || len(f) < 2 {
			return nil
		}
		n, err := strconv.Atoi(f[1])
		kb += n
		return err
	})
	return kb, err
}

// VmFlags returns the flags the kernel lists for this process's mapping that holds addr
// (its VmFlags line: "rd", "wr", "hg" for MADV_HUGEPAGE, ...).
func VmFlags(addr uintptr) ([]string, error) {
	var flags []string
	found := false
	err := scan(func(h []string) bool {
		var lo, hi uintptr
		if _, err := fmt.Sscanf(h[0], "%x-%x", &lo, &hi); err != nil || addr < lo || addr >= hi {
			return false
		}
		found = true
		return true
	}, func(f []string) error {
		if f[0] == "VmFlags:" {
			flags = f[1:]
		}
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("smaps: no mapping holds %#x", addr)
	}
	return flags, err
}
