// Command lookups measures Get on a store built from a bench/corpusgen corpus (ids
// p00000000…): a Get of a stored id (its record is read and its checksum checked) and a Get
// of an id that is not stored and sorts right after a stored one (the miss lands inside a
// leaf page, whose neighbourhood is checked for damage), p50 and p99 of each, with the
// process's RSS and RssAnon after. BENCHMARKS.md §0f runs it on the 1M-passage store.
//
//	go run ./bench/lookups [-n 20000] [-docs 1000000] STORE_DIR
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/memory"
)

func main() {
	n := flag.Int("n", 20000, "lookups of each kind")
	docs := flag.Int("docs", 1_000_000, "documents in the store (ids p00000000 up)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: lookups [-n N] [-docs D] STORE_DIR")
		os.Exit(2)
	}
	m, err := memory.OpenExisting(flag.Arg(0), memory.ReadOnly())
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(1)
	}
	defer m.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, *n)
	for i := range ids {
		ids[i] = fmt.Sprintf("p%08d", rng.IntN(*docs))
	}
	measure := func(name, suffix string, want error) {
		lat := make([]time.Duration, len(ids))
		for i, id := range ids {
			t := time.Now()
			_, err := m.Get(ctx, id+suffix)
			lat[i] = time.Since(t)
			if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
				fmt.Fprintf(os.Stderr, "%s %q: %v\n", name, id+suffix, err)
				os.Exit(1)
			}
		}
		slices.Sort(lat)
		fmt.Printf("%s: p50 %v p99 %v (%d lookups)\n", name, lat[len(lat)/2], lat[len(lat)*99/100], len(lat))
	}
	measure("get-hit", "", nil)
	measure("get-miss", "-x", memory.ErrNotFound)
	fmt.Printf("RSS %s, RssAnon %s\n", status("VmRSS"), status("RssAnon"))
}

// status reads one field of /proc/self/status (Linux).
func status(field string) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "?"
}
