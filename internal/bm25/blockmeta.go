package bm25

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// blockMetaMinPostings is the least postings of a list whose block metadata WriteBlockMeta
// records: a shorter list (a block or two) costs a query microseconds to read whole the
// first time it is asked for, a long one milliseconds (a first-seen query at 21M passages
// used to spend most of its time there).
var blockMetaMinPostings uint64 = 1025 // a variable for tests

// BlockMetaStats is what WriteBlockMeta did.
type BlockMetaStats struct {
	Segments int // segments whose sidecar it wrote
	Terms    int // lists it computed the metadata of
	Postings uint64
	Bytes    int64 // sidecar bytes written
}

// WriteBlockMeta makes the block metadata sidecar (.bmx) of every persisted segment of the
// index complete: the metadata of each list of at least blockMetaMinPostings postings, so
// that no query, in this process or in a read-only one later, reads a long list whole the
// first time it names its term. Segments whose sidecar is complete already are skipped;
// what a sidecar holds is kept. A writable index calls it when it closes (after a bulk
// ingest, the segments it leaves); nothing on a read-only or in-memory index.
func (b *Index) WriteBlockMeta(ctx context.Context) (st BlockMetaStats, err error) {
	defer recoverCorrupt(&err, "block metadata")
	if b.opts.ReadOnly || b.shadow != "" {
		return st, nil
	}
	err = b.withSnapshot(func(snap *scorch.IndexSnapshot) error {
		removeSidecarTemps(snap)
		for _, ss := range snap.Segments() {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := writeSegmentBlockMeta(ctx, ss.Segment(), &st); err != nil {
				return err
			}
		}
		return nil
	})
	if err == errNotScorch {
		return st, nil
	}
	return st, err
}

// writeSegmentBlockMeta writes seg's complete sidecar unless it has one.
func writeSegmentBlockMeta(ctx context.Context, seg segment.Segment, st *BlockMetaStats) error {
	path, head, ok := sidecarHead(seg)
	if !ok {
		return nil // not a file
	}
	full := completeHead(head)
	old, _ := os.ReadFile(path)
	// Keep the sound records a sidecar of this segment holds (queries computed them), up
	// to the first damaged one; a complete one wholly sound is left as it is (queries
	// check a record's CRC only when they need it, so this is where damage to a record no
	// query asks for is found and repaired).
	var buf bytes.Buffer
	buf.Write(full)
	known := map[string]bool{}
	if len(old) >= sidecarHeader && (bytes.Equal(old[:sidecarHeader], head) || bytes.Equal(old[:sidecarHeader], full)) {
		off := sidecarHeader
		for off < len(old) {
			term, n := scanSidecarRecord(old[off:])
			if n == 0 || !recordSound(old[off:off+n]) {
				break
			}
			if !known[string(term)] {
				known[string(term)] = true
				buf.Write(old[off : off+n])
			}
			off += n
		}
		if off == len(old) && bytes.Equal(old[:sidecarHeader], full) {
			return nil
		}
	}
	dict, err := seg.Dictionary(bodyField)
	if err != nil {
		return fmt.Errorf("%w: body dictionary: %v", ErrBM25, err)
	}
	it := dict.AutomatonIterator(nil, nil, nil)
	var (
		src  blockSource
		acc  frontAcc
		pl   segment.PostingsList
		term []byte
	)
	for i := 0; ; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		de, err := it.Next()
		if err != nil {
			return fmt.Errorf("%w: body dictionary: %v", ErrBM25, err)
		}
		if de == nil {
			break
		}
		if known[de.Term] {
			continue
		}
		term = append(term[:0], de.Term...)
		if pl, err = dict.PostingsList(term, nil, pl); err != nil {
			return fmt.Errorf("%w: postings %q: %v", ErrBM25, de.Term, err)
		}
		if pl.Count() < blockMetaMinPostings {
			continue
		}
		tb, _, err := buildBlocks(dict, term, &src, &acc, false)
		if err != nil {
			return fmt.Errorf("%w: postings %q: %v", ErrBM25, de.Term, err)
		}
		st.Terms++
		st.Postings += tb.total
		if len(tb.count) > 1 {
			buf.Write(sidecarRecord(de.Term, tb))
		}
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), atomicfile.Options{NoSync: true}); err != nil {
		return fmt.Errorf("%w: block metadata: %v", ErrBM25, err)
	}
	st.Segments++
	st.Bytes += int64(buf.Len())
	return nil
}

// removeSidecarTemps removes the temporary files of sidecars that a writer killed while
// writing left in the segment directory of snap (only the index's writer writes there),
// and the sidecars of segments no longer there.
func removeSidecarTemps(snap *scorch.IndexSnapshot) {
	for _, ss := range snap.Segments() {
		path, _, ok := sidecarHead(ss.Segment())
		if !ok {
			continue
		}
		dir := filepath.Dir(path)
		temps, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix("*"+sidecarExt)+"*"))
		for _, t := range temps {
			_ = os.Remove(t)
		}
		// Sidecars of segments merged away: their head names a file that is gone (a
		// sidecar is only ever read beside its own segment, so this is disk space only).
		cars, _ := filepath.Glob(filepath.Join(dir, "*.zap"+sidecarExt))
		for _, c := range cars {
			if _, err := os.Stat(strings.TrimSuffix(c, sidecarExt)); errors.Is(err, fs.ErrNotExist) {
				_ = os.Remove(c)
			}
		}
		return // one directory
	}
}

// recordSound reports whether the sidecar record rec (as scanSidecarRecord delimits it)
// passes its CRC.
func recordSound(rec []byte) bool {
	plen, k := binary.Uvarint(rec)
	if k <= 0 || uint64(len(rec)) != uint64(k)+plen+4 {
		return false
	}
	p := rec[k : k+int(plen)]
	return crc32.ChecksumIEEE(p) == binary.BigEndian.Uint32(rec[k+int(plen):])
}
