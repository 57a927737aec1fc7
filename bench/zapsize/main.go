// Command zapsize reports what a BM25 index's zap segments hold, field by field: terms,
// postings, terms with one posting (zap keeps those in the dictionary itself), and bytes a
// posting, to see where an index's size goes (BENCHMARKS.md §0zj).
//
// -recode FIELD also encodes each of the field's postings lists with internal/postings
// (blocks of 128, document gaps and frequencies bit-packed) and its terms in a vellum FST
// (term -> list offset), and reports those bytes: what the field would take in that format,
// with a document's length kept once a document (one byte, as Lucene's norms) instead of
// once a posting.
//
//	go run ./bench/zapsize [-recode body] /path/to/store/bm25/default/store
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/agentmem/memory/internal/postings"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	"github.com/blevesearch/vellum"
	zap "github.com/blevesearch/zapx/v16"
)

func main() {
	recode := flag.String("recode", "", "also encode this field's postings with internal/postings and report the bytes")
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
	var rc recoder
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
			var enc *fieldEncoder // -recode: this field's lists re-encoded as the walk reads them
			if field == *recode {
				if enc, err = rc.begin(); err != nil {
					fmt.Fprintln(os.Stderr, "zapsize: recode:", err)
					os.Exit(1)
				}
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
				if enc != nil {
					if err := enc.add([]byte(e.Term), pl); err != nil {
						fmt.Fprintln(os.Stderr, "zapsize: recode:", err)
						os.Exit(1)
					}
				}
			}
			if enc != nil {
				if err := enc.end(); err != nil {
					fmt.Fprintln(os.Stderr, "zapsize: recode:", err)
					os.Exit(1)
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
	if *recode != "" {
		total := rc.lists + rc.fst + docs
		fmt.Printf("field %q recoded: %d terms, %d postings; lists %d bytes (%.3f a posting), FST %d bytes, lengths %d bytes (one a document): %d bytes, %.3f a posting\n",
			*recode, rc.terms, rc.postings, rc.lists, float64(rc.lists)/float64(max(rc.postings, 1)), rc.fst, docs, total, float64(total)/float64(max(rc.postings, 1)))
	}
}

// recoder totals what -recode's field takes re-encoded, over every segment.
type recoder struct {
	terms, postings, lists, fst int64
	w                           postings.ListWriter
	buf                         []byte
}

// counter counts the bytes written to it.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*counter)(nil)

// fieldEncoder re-encodes one segment's lists of the field, its terms in an FST.
type fieldEncoder struct {
	r   *recoder
	fst *vellum.Builder
	c   counter
}

// begin starts one segment's field.
func (r *recoder) begin() (*fieldEncoder, error) {
	e := &fieldEncoder{r: r}
	fst, err := vellum.New(&e.c, nil)
	if err != nil {
		return nil, err
	}
	e.fst = fst
	return e, nil
}

// add encodes term's list pl (terms come in order).
func (e *fieldEncoder) add(term []byte, pl segment.PostingsList) error {
	r := e.r
	pi := pl.Iterator(true, false, false, nil)
	for {
		p, err := pi.Next()
		if err != nil {
			return err
		}
		if p == nil {
			break
		}
		if err := r.w.Add(uint32(p.Number()), uint32(p.Frequency())); err != nil {
			return err
		}
		r.postings++
	}
	if err := e.fst.Insert(term, uint64(r.lists)); err != nil {
		return err
	}
	r.buf = r.w.Finish(r.buf[:0])
	r.lists += int64(len(r.buf))
	r.terms++
	return nil
}

// end finishes the segment's FST and counts its bytes.
func (e *fieldEncoder) end() error {
	if err := e.fst.Close(); err != nil {
		return err
	}
	e.r.fst += e.c.n
	return nil
}
