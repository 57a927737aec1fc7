package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"

	bolt "go.etcd.io/bbolt"
)

// bbolt checks nothing of a page but its id and type when it reads one: a flipped bit in
// a branch element's child page id can point a lookup back up the tree (bbolt then
// recurses until the stack overflows, which no recover stops: the process ends), a branch
// or leaf page's element count lowered hides its last elements (lookups answer "not found",
// scans skip them, nothing fails). So before bbolt walks a collection's pages, the store
// reads them itself (pagecheck.go's parsePage, with ReadAt inside the read transaction,
// whose pages no writer reuses while it is open) as far as the walk needs:
//
//   - loading a collection (once a process) checks every branch page of its four buckets
//     (the pages a lookup descends through: a few hundred of 16 KiB for a million
//     documents), and that each page is reached once;
//   - a lookup that misses checks the pages it descended through and the leaf it ended in
//     (checkMiss), so a miss is honest;
//   - a walk of every record (rebuilding a derived index, counting again, check's full
//     read, listing ids) first checks every page it is about to read.
//
// Damage found is ErrCorrupt naming the page.

// rawBucket is a bucket as the raw reader finds it: its root page, or its page kept inline
// in its parent's value.
type rawBucket struct {
	name   string
	root   uint64
	inline []byte // its page, when root is 0
}

// rawWalk is a pageWalk over the pages that read transaction tx sees, reading its file
// through a handle of its own (closed by done).
func rawWalk(tx *bolt.Tx) (w *pageWalk, done func(), err error) {
	f, err := os.Open(tx.DB().Path())
	if err != nil {
		return nil, nil, err
	}
	ps := int64(tx.DB().Info().PageSize)
	hwm := uint64(tx.Size()) / uint64(ps)
	w = &pageWalk{r: f, pageSize: ps, hwm: hwm, seen: make([]uint64, (hwm+63)/64), max: 1}
	// The pages are read from a read-only mapping of the file where there is one (no
	// system call or copy a page: a census reads a thousand of them), else with ReadAt.
	unmap := func() {}
	if fi, err := f.Stat(); err == nil {
		w.data, unmap = mapFile(f, fi.Size())
	}
	return w, func() {
		w.data = nil
		unmap()
		f.Close()
	}, nil
}

// corrupt is an error wrapping ErrCorrupt.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: store.db: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// parsed reads and checks page id of bucket bucket (parsePage).
func (w *pageWalk) parsed(id uint64, bucket string) (leaf bool, elems []pageElem, err error) {
	if id < 2 || id >= w.hwm {
		return false, nil, corrupt("bucket %s points to page %d, not a data page of the file's %d", bucket, id, w.hwm)
	}
	p, pages, err := w.readPage(id)
	if err != nil {
		return false, nil, corrupt("page %d (bucket %s): %v", id, bucket, err)
	}
	leaf, elems, err = parsePage(p, id, pages, w.pageSize, w.hwm)
	if err != nil {
		return false, nil, corrupt("page %d (bucket %s): %v", id, bucket, err)
	}
	return leaf, elems, nil
}

// parsedAt is parsed with the elements in the buffer of tree level lvl: valid until the
// next page parsed at that level.
func (w *pageWalk) parsedAt(id uint64, bucket string, lvl int) (leaf bool, elems []pageElem, err error) {
	if id < 2 || id >= w.hwm {
		return false, nil, corrupt("bucket %s points to page %d, not a data page of the file's %d", bucket, id, w.hwm)
	}
	p, pages, err := w.readPage(id)
	if err != nil {
		return false, nil, corrupt("page %d (bucket %s): %v", id, bucket, err)
	}
	for len(w.levels) <= lvl {
		w.levels = append(w.levels, nil)
	}
	leaf, elems, err = parsePageInto(w.levels[lvl], p, id, pages, w.pageSize, w.hwm)
	if err != nil {
		return false, nil, corrupt("page %d (bucket %s): %v", id, bucket, err)
	}
	if cap(elems) > cap(w.levels[lvl]) {
		w.levels[lvl] = elems[:0]
	}
	return leaf, elems, nil
}

// inBounds checks that the keys of page id lie in [lo, hi) (nil: open), its parent's
// separators.
func inBounds(elems []pageElem, lo, hi []byte, id uint64, bucket string) error {
	if len(elems) == 0 {
		return nil
	}
	if first := elems[0].key; lo != nil && bytes.Compare(first, lo) < 0 {
		return corrupt("page %d (bucket %s): its first key %s sorts before its parent's separator %s", id, bucket, ShowKey(first), ShowKey(lo))
	}
	if last := elems[len(elems)-1].key; hi != nil && bytes.Compare(last, hi) >= 0 {
		return corrupt("page %d (bucket %s): its last key %s does not sort before its parent's next separator %s", id, bucket, ShowKey(last), ShowKey(hi))
	}
	return nil
}

// find looks key up in bucket b as bbolt does (in a branch page, the last element whose
// key is at most key, or the first), checking every page on the way; e is key's element
// when found. It parses into the walk's level buffers (parsedAt): e is a copy, its key
// and value in the page's bytes, so it outlives the next find.
func (w *pageWalk) find(b rawBucket, key []byte) (e pageElem, found bool, err error) {
	var elems []pageElem
	if b.root == 0 {
		if _, elems, err = parsePage(b.inline, 0, 1, w.pageSize, w.hwm); err != nil {
			return e, false, corrupt("bucket %s (kept inline): %v", b.name, err)
		}
	} else {
		id := b.root
		var lo, hi []byte
		for depth := 0; ; depth++ {
			if depth > maxTreeDepth {
				return e, false, corrupt("bucket %s: more than %d levels of pages (they point in a cycle)", b.name, maxTreeDepth)
			}
			leaf, es, err := w.parsedAt(id, b.name, depth)
			if err != nil {
				return e, false, err
			}
			if err := inBounds(es, lo, hi, id, b.name); err != nil {
				return e, false, err
			}
			if leaf {
				elems = es
				break
			}
			i := max(0, sort.Search(len(es), func(i int) bool { return bytes.Compare(es[i].key, key) > 0 })-1)
			lo, id = es[i].key, es[i].child
			if i+1 < len(es) {
				hi = es[i+1].key
			}
		}
	}
	i := sort.Search(len(elems), func(i int) bool { return bytes.Compare(elems[i].key, key) >= 0 })
	if i < len(elems) && bytes.Equal(elems[i].key, key) {
		return elems[i], true, nil
	}
	return e, false, nil
}

// open finds sub-bucket name of bucket parent; found is false when parent holds no element
// name. An element name that is not a bucket is ErrCorrupt.
func (w *pageWalk) open(parent rawBucket, name []byte) (b rawBucket, found bool, err error) {
	e, found, err := w.find(parent, name)
	if err != nil || !found {
		return b, false, err
	}
	b, err = w.bucketOf(parent.name, e)
	return b, true, err
}

// bucketOf is the sub-bucket of leaf element e of bucket parent (named in errors), its
// header checked, and its page when kept inline.
func (w *pageWalk) bucketOf(parent string, e pageElem) (b rawBucket, err error) {
	b.name = ShowKey(e.key)
	if parent != "" {
		b.name = parent + "/" + b.name
	}
	if e.flags&bucketElemFlag == 0 {
		return b, corrupt("bucket %s is stored as a value", b.name)
	}
	if len(e.val) < bucketHdrSize {
		return b, corrupt("bucket %s: its header is %d bytes", b.name, len(e.val))
	}
	if b.root = binary.LittleEndian.Uint64(e.val); b.root != 0 {
		if len(e.val) != bucketHdrSize {
			return b, corrupt("bucket %s has a root page and %d bytes inline", b.name, len(e.val)-bucketHdrSize)
		}
		return b, nil
	}
	b.inline = e.val[bucketHdrSize:]
	_, elems, err := parsePage(b.inline, 0, 1, w.pageSize, w.hwm)
	if err != nil {
		return b, corrupt("bucket %s (kept inline): %v", b.name, err)
	}
	for _, ie := range elems {
		if ie.flags&bucketElemFlag != 0 {
			return b, corrupt("bucket %s (kept inline) holds a bucket (%s)", b.name, ShowKey(ie.key))
		}
	}
	return b, nil
}

// rootBucket is tx's root bucket.
func rootBucket(tx *bolt.Tx) rawBucket {
	return rawBucket{root: uint64(tx.Cursor().Bucket().Root())}
}

// rawPath opens the buckets path (names from the root) in tx; found is false when one is
// not stored.
func (w *pageWalk) rawPath(tx *bolt.Tx, path ...[]byte) (b rawBucket, found bool, err error) {
	b = rootBucket(tx)
	for _, name := range path {
		if b, found, err = w.open(b, name); err != nil || !found {
			return b, found, err
		}
	}
	return b, true, nil
}

// checkBranches checks every branch page of bucket b's tree (the pages a lookup descends
// through), each within its parent's separators and reached once, and that every child
// page id of the lowest level (the leaves, not read) is named once. All leaves are at one
// depth in bbolt's trees: the depth is read down the first and the last child of each level.
func (w *pageWalk) checkBranches(b rawBucket) error {
	if b.root == 0 {
		return nil // kept inline: checked when opened
	}
	depth := -1
	for _, last := range []bool{false, true} {
		d, id := 0, b.root
		for ; ; d++ {
			if d > maxTreeDepth {
				return corrupt("bucket %s: more than %d levels of pages (they point in a cycle)", b.name, maxTreeDepth)
			}
			leaf, elems, err := w.parsedAt(id, b.name, 0)
			if err != nil {
				return err
			}
			if leaf {
				break
			}
			id = elems[0].child
			if last {
				id = elems[len(elems)-1].child
			}
		}
		if depth >= 0 && d != depth {
			return corrupt("bucket %s: its first leaf is %d levels down, its last %d", b.name, depth, d)
		}
		depth = d
	}
	var level func(id uint64, lo, hi []byte, lvl int) error
	level = func(id uint64, lo, hi []byte, lvl int) error {
		if w.reached(id) {
			return corrupt("page %d (bucket %s) is reached twice (damaged page ids)", id, b.name)
		}
		w.reach(id)
		leaf, elems, err := w.parsedAt(id, b.name, lvl)
		if err != nil {
			return err
		}
		switch {
		case leaf && lvl < depth:
			return corrupt("page %d (bucket %s) is a leaf %d levels down, where the tree's leaves are %d down", id, b.name, lvl, depth)
		case !leaf && lvl >= depth:
			return corrupt("page %d (bucket %s) is a branch %d levels down, where the tree's leaves are", id, b.name, lvl)
		}
		if err := inBounds(elems, lo, hi, id, b.name); err != nil {
			return err
		}
		if leaf {
			return nil
		}
		for i, e := range elems {
			next := hi
			if i+1 < len(elems) {
				next = elems[i+1].key
			}
			if lvl+1 < depth {
				if err := level(e.child, e.key, next, lvl+1); err != nil {
					return err
				}
				continue
			}
			if w.reached(e.child) { // a leaf, not read
				return corrupt("page %d (bucket %s) is reached twice (damaged page ids)", e.child, b.name)
			}
			w.reach(e.child)
		}
		return nil
	}
	return level(b.root, nil, nil, 0)
}

// checkAll checks every page of bucket b's tree (pageWalk.tree), and of its sub-buckets
// unless w is shallow.
func (w *pageWalk) checkAll(b rawBucket) error {
	if b.root == 0 {
		return nil // kept inline: checked when opened
	}
	w.max = 1
	w.tree(b.root, nil, nil, b.name, 0)
	if len(w.findings) > 0 {
		return corrupt("%s", w.findings[0])
	}
	return nil
}

// checkCollection checks, in tx, the pages that bbolt reads to reach collection name's
// buckets, and with all every page of them, else (unless branchesChecked: a census in tx
// just checked them) their branch pages (checkBranches). Nothing when the collection is
// not stored.
func checkCollection(tx *bolt.Tx, name string, all, branchesChecked bool) error {
	w, done, err := rawWalk(tx)
	if err != nil {
		return err
	}
	defer done()
	if !all {
		adviseRandom(w.data) // branch pages only
	}
	col, found, err := w.rawPath(tx, bkCols, []byte(name))
	if err != nil || !found {
		return err
	}
	for _, sub := range colSubBuckets {
		b, found, err := w.open(col, sub)
		switch {
		case err != nil:
			return err
		case !found:
			return fmt.Errorf("%w: collection %s has no %s bucket (its name or flags are damaged): its documents cannot be read",
				ErrCorrupt, ShowKey(name), sub)
		case all:
			err = w.checkAll(b)
		case branchesChecked:
		default:
			err = w.checkBranches(b)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkBucket checks, in tx, every page of the bucket at path (names from the root) before
// a walk of all of it (not the pages of its sub-buckets); nothing when it is not stored.
func checkBucket(tx *bolt.Tx, path ...[]byte) error {
	w, done, err := rawWalk(tx)
	if err != nil {
		return err
	}
	defer done()
	b, found, err := w.rawPath(tx, path...)
	if err != nil || !found {
		return err
	}
	w.shallow = true
	return w.checkAll(b)
}

// checkLookup checks, after bbolt's lookup of key in bucket b missed in a read
// transaction, the pages such a lookup descends through and the leaf it ends in: an error
// when they are damaged, or when they hold key (bbolt's miss was then wrong). Nothing in a
// write transaction (its changes are not on the pages yet) or for a bucket kept inline
// (its one page is read whole by checkMiss).
func checkLookup(b *bolt.Bucket, key []byte, name string) error {
	tx := b.Tx()
	if tx.Writable() || b.Root() == 0 {
		return nil
	}
	w, done, err := lookupWalk(tx)
	if err != nil {
		return err
	}
	defer done()
	_, found, err := w.find(rawBucket{name: name, root: uint64(b.Root())}, key)
	if err != nil {
		return err
	}
	if found {
		return errors.New("its page holds it, yet the lookup missed it")
	}
	return nil
}

// checkTree checks, before a walk of all of bucket b (named name in errors), every page of
// its tree (not of its sub-buckets). Nothing for a bucket kept inline (bbolt reads it from
// its parent's value) or made in the write transaction under way.
func checkTree(b *bolt.Bucket, name string) error {
	if b == nil || b.Root() == 0 {
		return nil
	}
	w, done, err := rawWalk(b.Tx())
	if err != nil {
		return err
	}
	defer done()
	w.shallow = true
	return w.checkAll(rawBucket{name: name, root: uint64(b.Root())})
}

// checkMissingCollection checks, after bbolt found no collection name in read transaction
// tx, the pages such a lookup reads: ErrCorrupt when they are damaged or hold it.
func checkMissingCollection(tx *bolt.Tx, name string) error {
	if tx.Writable() {
		return nil
	}
	w, done, err := lookupWalk(tx)
	if err != nil {
		return err
	}
	defer done()
	if _, found, err := w.rawPath(tx, bkCols, []byte(name)); err != nil {
		return err
	} else if found {
		return fmt.Errorf("%w: collection %s: its bucket is on the store's pages, yet bbolt does not find it", ErrCorrupt, ShowKey(name))
	}
	return nil
}

// A page id flipped in a branch element to the id of another page in use (of another
// bucket: another collection's documents under the same ids, whose checksums pass) or to
// a free page (an older copy of the page) leaves every page whole: only counting the
// references to each page finds it. The census (once a process, at the first collection
// loaded) reads every branch page of every bucket, the root and collection buckets' pages
// and the freelist, and holds each page id to one reference: a page named twice, or named
// and listed free, makes the collections whose trees name it damaged (ErrCorrupt when
// loaded). It reads about one page in a hundred of a store (its leaves only by id).

// census is what the census of a store's page references found.
type census struct {
	err     error            // the top-level buckets are damaged: every collection is
	damaged map[string]error // collections whose trees name pages wrongly
	txid    int              // the transaction it was taken in
	vouched bool             // not taken: the file's census record vouched for it
}

// covers reports whether the census, taken in tx itself, checked the branch pages of
// collection name's buckets and found them sound: the check a load makes (checkCollection)
// was then just made on the same pages, and is not made again.
func (c *census) covers(tx *bolt.Tx, name string) bool {
	return c != nil && c.txid == tx.ID() && c.err == nil && c.damaged[name] == nil
}

// censusOf returns the census of db, taken in tx on the first call.
func (db *DB) censusOf(tx *bolt.Tx) *census {
	db.censusOnce.Do(func() {
		if verified(db.path, uint64(tx.ID())) {
			db.census = &census{damaged: map[string]error{}, txid: tx.ID(), vouched: true}
			return
		}
		db.census = takeCensus(tx, !db.ro)
	})
	return db.census
}

// CensusVouched reports whether this process took the census of the store as read, from
// the record of the writer that closed it last (verified.go): for tests.
func (db *DB) CensusVouched() bool { return db.census != nil && db.census.vouched }

// censusErr is what the census of db says of collection name: nil when nothing is wrong.
func (db *DB) censusErr(tx *bolt.Tx, name string) error {
	c := db.censusOf(tx)
	if c.err != nil {
		return c.err
	}
	if err := c.damaged[name]; err != nil {
		return fmt.Errorf("%w (collection %s)", err, ShowKey(name))
	}
	return nil
}

// takeCensus counts the references to each page that tx sees (census); writable: the
// store is open for writing.
func takeCensus(tx *bolt.Tx, writable bool) *census {
	c := &census{damaged: map[string]error{}, txid: tx.ID()}
	w, done, err := rawWalk(tx)
	if err != nil {
		c.err = err
		return c
	}
	defer done()
	adviseRandom(w.data) // branch pages, scattered over the file
	owner := make([]int32, w.hwm)
	owners := []string{""} // index 0: none
	// name records that tree t (an owner) references page id; false when it was damage.
	damage := func(t int32, err error) {
		if name := owners[t]; name != "" && c.damaged[name] == nil {
			c.damaged[name] = err
		} else if name == "" && c.err == nil {
			c.err = err
		}
	}
	name := func(id uint64, t int32, what string) bool {
		if id >= w.hwm {
			damage(t, corrupt("%s names page %d, past the file's %d", what, id, w.hwm))
			return false
		}
		if prev := owner[id]; prev != 0 {
			err := corrupt("page %d is named twice, by %s and %s (a page id is damaged)", id, treeName(owners, prev), treeName(owners, t))
			damage(prev, err)
			damage(t, err)
			return false
		}
		owner[id] = t
		return true
	}
	// whole walks a tree of the top level or of the collections' list, every page of it,
	// calling sub for each bucket element of its leaves.
	var whole func(id uint64, t int32, what string, depth int, sub func(e pageElem) error) error
	whole = func(id uint64, t int32, what string, depth int, sub func(e pageElem) error) error {
		if depth > maxTreeDepth {
			return corrupt("bucket %s: more than %d levels of pages (they point in a cycle)", what, maxTreeDepth)
		}
		if id < 2 || !name(id, t, what) {
			return corrupt("bucket %s names page %d wrongly", what, id)
		}
		p, pages, err := w.readPage(id)
		if err != nil {
			return corrupt("page %d (bucket %s): %v", id, what, err)
		}
		for i := uint64(1); i < uint64(pages); i++ {
			if !name(id+i, t, what) {
				return corrupt("page %d (bucket %s) spans a page named elsewhere", id, what)
			}
		}
		leaf, elems, err := parsePage(p, id, pages, w.pageSize, w.hwm)
		if err != nil {
			return corrupt("page %d (bucket %s): %v", id, what, err)
		}
		for _, e := range elems {
			switch {
			case !leaf:
				if err := whole(e.child, t, what, depth+1, sub); err != nil {
					return err
				}
			case e.flags&bucketElemFlag != 0:
				if err := sub(e); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// branches names the pages of a collection's bucket tree as checkBranches reads them
	// (its branch pages, and its leaves by id).
	mark := &pageWalk{r: w.r, data: w.data, pageSize: w.pageSize, hwm: w.hwm, seen: make([]uint64, len(w.seen)), max: 1, logged: true}
	branches := func(b rawBucket, t int32) error {
		if b.root == 0 {
			return nil
		}
		mark.log = mark.log[:0]
		err := mark.checkBranches(b)
		for _, id := range mark.log {
			mark.seen[id/64] = 0 // clear for the next tree
		}
		if err != nil {
			return err
		}
		for _, id := range mark.log {
			if !name(id, t, b.name) {
				return nil // recorded
			}
		}
		return nil
	}
	root := rootBucket(tx)
	owners = append(owners, "") // 1: the top level's trees
	top := int32(len(owners) - 1)
	err = whole(root.root, top, "(root)", 0, func(e pageElem) error {
		b, err := w.bucketOf("", e)
		if err != nil || b.root == 0 {
			return err
		}
		if !bytes.Equal(e.key, bkCols) {
			return whole(b.root, top, b.name, 0, func(pageElem) error { return nil })
		}
		return whole(b.root, top, b.name, 0, func(ce pageElem) error {
			col, err := w.bucketOf(b.name, ce)
			if err != nil {
				return err
			}
			owners = append(owners, string(ce.key))
			t := int32(len(owners) - 1)
			var subs []pageElem
			collect := func(se pageElem) error { subs = append(subs, se); return nil }
			if col.root == 0 {
				_, elems, _ := parsePage(col.inline, 0, 1, w.pageSize, w.hwm) // checked by bucketOf
				for _, se := range elems {
					if se.flags&bucketElemFlag != 0 {
						subs = append(subs, se)
					}
				}
			} else if err := whole(col.root, t, col.name, 0, collect); err != nil {
				damage(t, err)
				return nil
			}
			for _, se := range subs {
				sb, err := w.bucketOf(col.name, se)
				if err == nil {
					err = branches(sb, t)
				}
				if err != nil {
					damage(t, err)
					return nil
				}
			}
			return nil
		})
	})
	if err != nil && c.err == nil {
		c.err = err
	}
	if c.err != nil {
		return c
	}
	// A page named and listed free: the name is damaged, or the freelist. A writer would
	// hand that page out again (and overwrite what is there), so on a writable store a
	// damaged freelist stops every collection; read-only, the collection naming the page.
	f, ok := w.r.(*os.File)
	if !ok {
		return c
	}
	fi, err := f.Stat()
	if err != nil {
		c.err = err
		return c
	}
	m, ok := currentMeta(f, fi.Size())
	if !ok || m.txid != uint64(tx.ID()) {
		return c // a later transaction's freelist
	}
	free, err := freelistIDs(f, m)
	if err != nil {
		if writable {
			c.err = corrupt("the freelist is damaged: %v", err)
		}
		return c
	}
	for _, id := range free {
		if id < w.hwm && owner[id] != 0 {
			err := corrupt("page %d is in use by %s and listed free", id, treeName(owners, owner[id]))
			if writable && c.err == nil {
				c.err = err
			}
			damage(owner[id], err)
		}
	}
	return c
}

// treeName names tree t of a census in errors.
func treeName(owners []string, t int32) string {
	if owners[t] == "" {
		return "the store's top-level buckets"
	}
	return "collection " + ShowKey(owners[t])
}
