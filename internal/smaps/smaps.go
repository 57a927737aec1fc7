// Package smaps reads /proc/self/smaps (Linux): how much of the files a process maps is
// resident. Tests use it to check that dropping a mapping's pages took effect.
package smaps

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// ResidentKB returns the resident kB of this process's mappings of the files whose path
// match accepts.
func ResidentKB(match func(path string) bool) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in, kb := false, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			in = len(fields) >= 6 && match(fields[len(fields)-1]) // a mapping's header line
		case in && len(fields) >= 2 && fields[0] == "Rss:":
			n, err := strconv.Atoi(fields[1])
			if err != nil {
				return 0, err
			}
			kb += n
		}
	}
	return kb, sc.Err()
}
