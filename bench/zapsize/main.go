// Command zapsize reports what a BM25 index's zap segments hold, field by field: terms,
// postings, terms with one posting (zap keeps those in the dictionary itself), and bytes a
// posting, to see where an index's size goes (BENCHMARKS.md §0zj).
//
//	go run ./bench/zapsize /path/to/store/bm25/default/store
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	zap "github.com/blevesearch/zapx/v16"
)

func main() {
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: zapsize DIR (a scorch store folder holding .zap files)")
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(flag.Arg(0), "*.zap"))
	if err != nil || len(files) == 0 {
		fmt.Fprintln(os.Stderr, "zapsize: no .zap files in", flag.Arg(0), err)
		os.Exit(1)
	}
	type tally struct{ terms, postings, oneHit uint64 }
	fields := map[string]*tally{}
	var bytes, docs int64
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zapsize:", err)
			os.Exit(1)
		}
		bytes += fi.Size()
		seg, err := (&zap.ZapPlugin{}).Open(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zapsize:", f, err)
			os.Exit(1)
		}
		sb := seg.(*zap.Segment)
		docs += int64(sb.Count())
		for _, field := range sb.Fields() {
			d, err := sb.Dictionary(field)
			if err != nil {
				fmt.Fprintln(os.Stderr, "zapsize:", err)
				os.Exit(1)
			}
			t := fields[field]
			if t == nil {
				t = &tally{}
				fields[field] = t
			}
			it := d.AutomatonIterator(nil, nil, nil)
			for {
				e, err := it.Next()
				if err != nil {
					fmt.Fprintln(os.Stderr, "zapsize:", err)
					os.Exit(1)
				}
				if e == nil {
					break
				}
				// (The iterator's own count reuses one postings list, whose one-posting
				// form stays set after a term that has it: read each term's list afresh.)
				pl, err := d.PostingsList([]byte(e.Term), nil, nil)
				if err != nil {
					fmt.Fprintln(os.Stderr, "zapsize:", err)
					os.Exit(1)
				}
				n := pl.Count()
				t.terms++
				t.postings += n
				if n == 1 {
					t.oneHit++
				}
			}
		}
		seg.Close()
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	var all uint64
	fmt.Printf("%d segment files, %d bytes, %d documents\n", len(files), bytes, docs)
	for _, n := range names {
		t := fields[n]
		all += t.postings
		fmt.Printf("field %-12q terms %12d postings %14d one-posting terms %12d\n", n, t.terms, t.postings, t.oneHit)
	}
	fmt.Printf("all fields: %d postings, %.2f bytes a posting\n", all, float64(bytes)/float64(max(all, 1)))
}
