package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The page check reads a bbolt file's pages itself, with ReadAt (never through a mapping,
// so no read can fault), and validates every branch and leaf page reachable from the root
// bucket before anything walks them with bbolt's unchecked pointer arithmetic: each
// element inside its page (bbolt writes a node's elements and then their keys and values
// back to back, so each key starts where the previous value ended, the first right after
// the element headers, and the last ends in the page's last overflow page), keys in order
// on each page and within their parent's separators, child page ids inside the high water
// mark, each page reached once (no cycles), sub-buckets (on pages of their own, or inline
// in their parent's value) checked the same way. With the freelist it then holds the
// file's pages to it: every page below the high water mark reachable or free, never both.
//
// bbolt's own Tx.Check walks the same tree on a goroutine of its own, where a damaged
// page's out-of-range slice or fault cannot be recovered and ends the process: Consistency
// uses this check instead of it.

// Layout of bbolt (v1.4, format version 2) pages, little-endian: a 16-byte header (page id
// 8, flags 2, element count 2, overflow pages 4), then count elements of 16 bytes (leaf:
// flags, pos, ksize, vsize, 4 each; branch: pos, ksize 4 each, child page id 8; pos counts
// from the element's own first byte), then keys and values. A bucket's value is its header
// (root page id, sequence: 8 each) and, when the root page id is 0, the bucket's one leaf
// page inline (page id 0).
const (
	pageHeaderSize = 16
	elemSize       = 16
	bucketHdrSize  = 16
	branchFlag     = 0x01
	leafFlag       = 0x02
	bucketElemFlag = 0x01
	// maxTreeDepth bounds the nesting of pages and buckets the check follows (a store is
	// a handful of levels deep; a damaged page id cannot send it further).
	maxTreeDepth = 64
)

// pageElem is one element of a checked page: its key, and its value (leaf) or child page
// id (branch).
type pageElem struct {
	key, val []byte
	flags    uint32
	child    uint64
}

// parsePage checks the branch or leaf page p (its bytes: the page and its overflow pages,
// or an inline bucket's page) as bbolt wrote it and returns its elements. id is the page's
// own id (0: an inline page, which must be a leaf whose data fills it exactly), pages how
// many pages p spans, hwm the file's high water mark. The error says what is wrong, without
// the page id (the caller names it).
func parsePage(p []byte, id uint64, pages int64, pageSize int64, hwm uint64) (leaf bool, elems []pageElem, err error) {
	return parsePageInto(nil, p, id, pages, pageSize, hwm)
}

// parsePageInto is parsePage returning the elements in buf's array when it has room (a
// walk reuses one buffer a level of its tree).
func parsePageInto(buf []pageElem, p []byte, id uint64, pages int64, pageSize int64, hwm uint64) (leaf bool, elems []pageElem, err error) {
	if len(p) < pageHeaderSize {
		return false, nil, fmt.Errorf("%d bytes, shorter than a page header", len(p))
	}
	le := binary.LittleEndian
	if got := le.Uint64(p); got != id {
		return false, nil, fmt.Errorf("its header names page %d", got)
	}
	flags, count := le.Uint16(p[8:]), int(le.Uint16(p[10:]))
	switch {
	case flags == leafFlag:
		leaf = true
	case flags == branchFlag && id != 0:
	default:
		return false, nil, fmt.Errorf("not a branch or leaf page (flags %#x)", flags)
	}
	if !leaf && count == 0 {
		return false, nil, errors.New("a branch page with no elements")
	}
	next := pageHeaderSize + count*elemSize // where the first key must start
	if next > len(p) {
		return false, nil, fmt.Errorf("%d elements do not fit in its %d bytes", count, len(p))
	}
	if cap(buf) >= count {
		elems = buf[:count]
	} else {
		elems = make([]pageElem, count)
	}
	for i := range count {
		h := p[pageHeaderSize+i*elemSize:]
		var e pageElem
		var pos, ksize, vsize uint32
		if leaf {
			e.flags, pos, ksize, vsize = le.Uint32(h), le.Uint32(h[4:]), le.Uint32(h[8:]), le.Uint32(h[12:])
			if e.flags&^bucketElemFlag != 0 {
				return false, nil, fmt.Errorf("element %d has flags %#x", i, e.flags)
			}
		} else {
			pos, ksize, e.child = le.Uint32(h), le.Uint32(h[4:]), le.Uint64(h[8:])
			if e.child < 2 || e.child >= hwm || e.child == id {
				return false, nil, fmt.Errorf("element %d points to page %d, not a data page of the file's %d", i, e.child, hwm)
			}
		}
		start := int64(pageHeaderSize+i*elemSize) + int64(pos)
		end := start + int64(ksize) + int64(vsize)
		switch {
		case start != int64(next):
			return false, nil, fmt.Errorf("element %d's key is at byte %d, not %d where the previous element's data ends", i, start, next)
		case ksize == 0:
			return false, nil, fmt.Errorf("element %d has an empty key", i)
		case end > int64(len(p)):
			return false, nil, fmt.Errorf("element %d's data (%d bytes at %d) runs past the page's %d bytes", i, int64(ksize)+int64(vsize), start, len(p))
		}
		e.key = p[start : start+int64(ksize)]
		if leaf {
			e.val = p[start+int64(ksize) : end]
		}
		if i > 0 && bytes.Compare(elems[i-1].key, e.key) >= 0 {
			return false, nil, fmt.Errorf("keys %s and %s of elements %d and %d are out of order", ShowKey(elems[i-1].key), ShowKey(e.key), i-1, i)
		}
		elems[i] = e
		next = int(end)
	}
	switch {
	case id == 0 && next != len(p):
		return false, nil, fmt.Errorf("its data ends at byte %d of its %d", next, len(p))
	case id != 0 && int64(next) <= (pages-1)*pageSize:
		// bbolt allocates a node the pages its data needs: no more.
		return false, nil, fmt.Errorf("its data ends at byte %d, before its last overflow page", next)
	case id != 0:
		// bbolt writes a node into zeroed pages: past its data a page holds zeros. A
		// lowered element count, a shorter last key or value, leave bytes there.
		if i := nonZero(p[next:]); i >= 0 {
			return false, nil, fmt.Errorf("bytes past its data (from byte %d) are not zero at byte %d (an element count or size is damaged)", next, next+i)
		}
	}
	return leaf, elems, nil
}

// nonZero is the index of the first byte of b that is not zero, -1 when none.
func nonZero(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] != 0 {
			return i
		}
	}
	return -1
}

// pageWalk walks the pages of a bbolt file from its root bucket (pageCheck).
type pageWalk struct {
	r        io.ReaderAt
	data     []byte // the file mapped read-only, when it is (readPage reads from it)
	pageSize int64
	hwm      uint64
	seen     []uint64 // bit per page: reached
	findings []string
	more     int // findings past max
	max      int
	shallow  bool         // sub-buckets on pages of their own are not walked
	logged   bool         // reach appends to log
	log      []uint64     // the pages reached, when logged
	levels   [][]pageElem // element buffers by tree level, reused (parsedAt)
}

// finding records one thing wrong (at most max are kept; the rest are counted).
func (w *pageWalk) finding(format string, args ...any) {
	if len(w.findings) < w.max {
		w.findings = append(w.findings, fmt.Sprintf(format, args...))
	} else {
		w.more++
	}
}

func (w *pageWalk) reached(id uint64) bool { return w.seen[id/64]&(1<<(id%64)) != 0 }
func (w *pageWalk) reach(id uint64) {
	w.seen[id/64] |= 1 << (id % 64)
	if w.logged {
		w.log = append(w.log, id)
	}
}

// readPage reads page id with its overflow pages; the error says why it cannot be read.
// The page is shared with the file's mapping when there is one: callers never modify it.
func (w *pageWalk) readPage(id uint64) ([]byte, int64, error) {
	off := int64(id) * w.pageSize
	var h [pageHeaderSize]byte
	if w.data != nil {
		if off+pageHeaderSize > int64(len(w.data)) {
			return nil, 0, fmt.Errorf("cannot be read: past the end of the file (%d bytes)", len(w.data))
		}
		copy(h[:], w.data[off:])
	} else if _, err := w.r.ReadAt(h[:], off); err != nil {
		return nil, 0, fmt.Errorf("cannot be read: %v", err)
	}
	overflow := uint64(binary.LittleEndian.Uint32(h[12:]))
	if overflow >= w.hwm-id { // id < hwm: no wrap
		return nil, 0, fmt.Errorf("its %d overflow pages run past the last page (%d)", overflow, w.hwm)
	}
	pages := int64(overflow) + 1
	if w.data != nil {
		if end := off + pages*w.pageSize; end <= int64(len(w.data)) {
			return w.data[off:end:end], pages, nil
		}
		return nil, 0, fmt.Errorf("cannot be read: its %d pages run past the end of the file (%d bytes)", pages, len(w.data))
	}
	p := make([]byte, pages*w.pageSize)
	if _, err := w.r.ReadAt(p, int64(id)*w.pageSize); err != nil {
		return nil, 0, fmt.Errorf("cannot be read: %v", err)
	}
	return p, pages, nil
}

// tree checks the page tree of a bucket from page id: its keys in [lo, hi) (nil: open),
// depth levels below the root bucket. bucket names the bucket in findings.
func (w *pageWalk) tree(id uint64, lo, hi []byte, bucket string, depth int) {
	if depth > maxTreeDepth {
		w.finding("page %d (bucket %s): more than %d levels deep (its pages point in a cycle)", id, bucket, maxTreeDepth)
		return
	}
	if id < 2 || id >= w.hwm {
		w.finding("bucket %s points to page %d, not a data page of the file's %d", bucket, id, w.hwm)
		return
	}
	if w.reached(id) {
		w.finding("page %d (bucket %s) is reached twice (damaged page ids)", id, bucket)
		return
	}
	p, pages, err := w.readPage(id)
	if err != nil {
		w.reach(id)
		w.finding("page %d (bucket %s): %v", id, bucket, err)
		return
	}
	for i := range uint64(pages) {
		if w.reached(id + i) {
			w.finding("page %d (bucket %s) spans page %d, which is reached already", id, bucket, id+i)
			return
		}
		w.reach(id + i)
	}
	leaf, elems, err := parsePage(p, id, pages, w.pageSize, w.hwm)
	if err != nil {
		w.finding("page %d (bucket %s): %v", id, bucket, err)
		return
	}
	if len(elems) > 0 {
		if first := elems[0].key; lo != nil && bytes.Compare(first, lo) < 0 {
			w.finding("page %d (bucket %s): its first key %s sorts before its parent's separator %s", id, bucket, ShowKey(first), ShowKey(lo))
			return
		}
		if last := elems[len(elems)-1].key; hi != nil && bytes.Compare(last, hi) >= 0 {
			w.finding("page %d (bucket %s): its last key %s does not sort before the parent's next separator %s", id, bucket, ShowKey(last), ShowKey(hi))
			return
		}
	}
	if !leaf {
		for i, e := range elems {
			next := hi
			if i+1 < len(elems) {
				next = elems[i+1].key
			}
			w.tree(e.child, e.key, next, bucket, depth+1)
		}
		return
	}
	for _, e := range elems {
		if e.flags&bucketElemFlag != 0 {
			w.bucket(e, id, bucket, depth+1)
		}
	}
}

// bucket checks the sub-bucket of leaf element e of page id (a bucket on pages of its own,
// or inline in e's value).
func (w *pageWalk) bucket(e pageElem, id uint64, parent string, depth int) {
	name := parent + "/" + ShowKey(e.key)
	if parent == "" {
		name = ShowKey(e.key)
	}
	if len(e.val) < bucketHdrSize {
		w.finding("page %d (bucket %s): the value of sub-bucket %s is %d bytes, shorter than a bucket header", id, parent, name, len(e.val))
		return
	}
	root := binary.LittleEndian.Uint64(e.val)
	if root != 0 {
		if len(e.val) != bucketHdrSize {
			w.finding("page %d (bucket %s): sub-bucket %s has a root page and %d bytes inline", id, parent, name, len(e.val)-bucketHdrSize)
			return
		}
		if !w.shallow {
			w.tree(root, nil, nil, name, depth)
		}
		return
	}
	_, elems, err := parsePage(e.val[bucketHdrSize:], 0, 1, w.pageSize, w.hwm)
	if err != nil {
		w.finding("page %d (bucket %s): its inline sub-bucket %s: %v", id, parent, name, err)
		return
	}
	for _, ie := range elems {
		if ie.flags&bucketElemFlag != 0 {
			w.finding("page %d (bucket %s): its inline sub-bucket %s holds a bucket (%s)", id, parent, name, ShowKey(ie.key))
			return
		}
	}
}

// pageCheck checks every page of the bbolt file at path that its current meta page's root
// bucket reaches (pageWalk), then that each page below the high water mark is either
// reached or listed free by the freelist, not both. It returns up to max findings, each
// naming the page, and the number of further ones; the error is one of reading the file
// (or of a file CheckFile would reject).
func pageCheck(path string, max int) (findings []string, more int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	m, ok := currentMeta(f, fi.Size())
	if !ok {
		return nil, 0, fmt.Errorf("%w: %s has no valid bbolt meta page", ErrCorrupt, path)
	}
	if m.pageSize == 0 || m.pgid > uint64(fi.Size())/uint64(m.pageSize) || m.pgid < 2 {
		return nil, 0, fmt.Errorf("%w: %s is truncated", ErrCorrupt, path)
	}
	w := &pageWalk{r: f, pageSize: int64(m.pageSize), hwm: m.pgid, seen: make([]uint64, (m.pgid+63)/64), max: max}
	w.reach(0)
	w.reach(1)
	free, ferr := freelistIDs(f, m)
	if ferr != nil {
		w.finding("the freelist is damaged: %v", ferr)
	} else if m.freelist != ^uint64(0) {
		var h [pageHeaderSize]byte
		if _, err := f.ReadAt(h[:], int64(m.freelist)*int64(m.pageSize)); err != nil {
			return nil, 0, err
		}
		for i := range uint64(binary.LittleEndian.Uint32(h[12:])) + 1 {
			w.reach(m.freelist + i) // freelistIDs checked that it fits
		}
	}
	w.tree(m.root, nil, nil, "(root)", 0)
	if ferr == nil && m.freelist != ^uint64(0) && len(w.findings) == 0 {
		// Damage found above leaves pages unreached: only a tree found whole is held to
		// the freelist.
		isFree := make([]uint64, len(w.seen))
		for _, id := range free {
			if isFree[id/64]&(1<<(id%64)) != 0 {
				w.finding("page %d is listed free twice", id)
			}
			isFree[id/64] |= 1 << (id % 64)
			if w.reached(id) {
				w.finding("page %d is in use and listed free", id)
			}
		}
		for id := uint64(2); id < m.pgid; id++ {
			if !w.reached(id) && isFree[id/64]&(1<<(id%64)) == 0 {
				w.finding("page %d is neither in use nor listed free", id)
			}
		}
	}
	return w.findings, w.more, nil
}

// freelistIDs reads the freelist page that meta page m names and returns its page ids,
// checked (checkFreelist) that bbolt can read it: a freelist page, its ids inside its
// pages and each a page of the file. None when the freelist is not persisted.
func freelistIDs(f *os.File, m boltMeta) ([]uint64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if m.freelist == ^uint64(0) {
		return nil, nil // not persisted: bbolt rebuilds it by reading every page
	}
	if m.pageSize == 0 || m.freelist >= m.pgid || m.freelist < 2 {
		return nil, fmt.Errorf("freelist page %d is not a data page of the file's %d", m.freelist, m.pgid)
	}
	if held := uint64(fi.Size()) / uint64(m.pageSize); m.freelist >= held {
		return nil, fmt.Errorf("freelist page %d cannot be read: the file holds %d pages", m.freelist, held)
	}
	ps := int64(m.pageSize)
	var h [24]byte
	if _, err := f.ReadAt(h[:], int64(m.freelist)*ps); err != nil {
		return nil, fmt.Errorf("freelist page %d cannot be read: %v", m.freelist, err)
	}
	le := binary.LittleEndian
	id, flags, count, overflow := le.Uint64(h[:]), le.Uint16(h[8:]), uint64(le.Uint16(h[10:])), uint64(le.Uint32(h[12:]))
	const freelistPageFlag = 0x10
	if flags != freelistPageFlag {
		return nil, fmt.Errorf("freelist page %d is not a freelist page (flags %#x)", m.freelist, flags)
	}
	if id != m.freelist {
		return nil, fmt.Errorf("freelist page %d names itself page %d", m.freelist, id)
	}
	if overflow >= m.pgid-m.freelist { // m.freelist < m.pgid: no wrap
		return nil, fmt.Errorf("freelist page %d runs past the last page (%d overflow pages of %d)", m.freelist, overflow, m.pgid)
	}
	first := int64(16)
	if count == 0xFFFF {
		count, first = le.Uint64(h[16:]), 24
	}
	if room := ((int64(overflow)+1)*ps - first) / 8; count > uint64(room) {
		return nil, fmt.Errorf("freelist page %d lists %d ids, room for %d", m.freelist, count, room)
	}
	raw := make([]byte, 8*count)
	if _, err := f.ReadAt(raw, int64(m.freelist)*ps+first); err != nil {
		return nil, fmt.Errorf("freelist page %d cannot be read: %v", m.freelist, err)
	}
	ids := make([]uint64, count)
	for i := range count {
		if ids[i] = le.Uint64(raw[8*i:]); ids[i] < 2 || ids[i] >= m.pgid {
			return nil, fmt.Errorf("freelist page %d lists page %d, outside the file's %d pages", m.freelist, ids[i], m.pgid)
		}
	}
	return ids, nil
}

// maxShown is the most bytes of a key, id or name that an error message shows.
const maxShown = 64

// ShowKey is key (a stored key, an id, a name) as an error message shows it: quoted, and
// when longer than 64 bytes its first 64 and its length (a damaged key can be megabytes
// long: echoing it whole floods a terminal or a log).
func ShowKey[T ~string | ~[]byte](key T) string {
	if len(key) <= maxShown {
		return fmt.Sprintf("%q", key)
	}
	cut := maxShown
	for cut > maxShown-4 && cut > 0 && !utf8Start(key[cut]) {
		cut-- // not in the middle of a character
	}
	return fmt.Sprintf("%q… (%d bytes)", key[:cut], len(key))
}

// utf8Start reports whether b can begin a UTF-8 character.
func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// ShowKeys is keys as an error message shows them (ShowKey each, at most 10).
func ShowKeys(keys []string) string {
	shown := make([]string, 0, min(len(keys), 10))
	for _, k := range keys[:min(len(keys), 10)] {
		shown = append(shown, ShowKey(k))
	}
	s := "[" + strings.Join(shown, " ") + "]"
	if len(keys) > 10 {
		s += fmt.Sprintf(" and %d more", len(keys)-10)
	}
	return s
}

// PageInfo is one branch or leaf page of a bbolt file (Pages).
type PageInfo struct {
	ID     uint64
	Offset int64  // its first byte in the file
	Bucket string // the bucket whose tree holds it: names joined by "/" ("(root)": the root bucket)
	Branch bool
	Count  int // elements
}

// Pages lists the branch and leaf pages that the current meta page of the bbolt file at
// path reaches, in the order a walk meets them; tests damage stores with it. Damaged pages
// and what they point to are left out.
func Pages(path string) ([]PageInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	m, ok := currentMeta(f, fi.Size())
	if !ok || m.pgid > uint64(fi.Size())/uint64(m.pageSize) {
		return nil, fmt.Errorf("%w: %s", ErrCorrupt, path)
	}
	w := &pageWalk{r: f, pageSize: int64(m.pageSize), hwm: m.pgid, seen: make([]uint64, (m.pgid+63)/64)}
	var out []PageInfo
	var visit func(id uint64, bucket string)
	visit = func(id uint64, bucket string) {
		if id < 2 || id >= w.hwm || w.reached(id) {
			return
		}
		w.reach(id)
		p, pages, err := w.readPage(id)
		if err != nil {
			return
		}
		leaf, elems, err := parsePage(p, id, pages, w.pageSize, w.hwm)
		if err != nil {
			return
		}
		out = append(out, PageInfo{ID: id, Offset: int64(id) * w.pageSize, Bucket: bucket, Branch: !leaf, Count: len(elems)})
		for _, e := range elems {
			switch {
			case !leaf:
				visit(e.child, bucket)
			case e.flags&bucketElemFlag != 0 && len(e.val) == bucketHdrSize:
				name := string(e.key)
				if bucket != "(root)" {
					name = bucket + "/" + name
				}
				visit(binary.LittleEndian.Uint64(e.val), name)
			}
		}
	}
	visit(m.root, "(root)")
	return out, nil
}
