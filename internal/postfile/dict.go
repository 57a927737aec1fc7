package postfile

import (
	"bytes"
	"encoding/binary"
	"math"
)

// The dictionary of a version 3 file: the terms in blocks of dictBlock, each
// term front-coded against the one before it in its block, then the blocks'
// offsets. Building an FST (version 2) minimizes a graph of every term's
// suffixes as the terms arrive: about 280 ns a term, a tenth of a bulk
// load's CPU, spent again by every merge. Writing a block costs a copy of
// each term's new bytes; a lookup binary-searches the blocks' first terms,
// then reads at most dictBlock terms of one block.
//
//	dict    = block* offset*
//	block   = term{1,dictBlock}: the terms dictBlock*i ... of the file
//	term    = shared suffixlen suffix value, three uvarints and bytes:
//	          shared, the bytes the term shares with the previous term of
//	          its block (0 for a block's first); suffix, the rest; value,
//	          the dictionary value
//	offset  = u32, a block's start within dict, ascending from 0
//
// The number of blocks follows from the footer's term count.

// dictBlock is the number of terms in a block of the dictionary.
const dictBlock = 32

// dictWriter builds a version 3 dictionary. Terms come strictly ascending.
type dictWriter struct {
	buf     []byte
	offsets []uint32
	prev    []byte
	n       uint64
	err     error
}

// add appends term with value v.
func (d *dictWriter) add(term []byte, v uint64) error {
	if d.err != nil {
		return d.err
	}
	shared := 0
	if d.n%dictBlock == 0 {
		if len(d.buf) > math.MaxUint32 {
			d.err = badInput("dictionary over 4 GiB")
			return d.err
		}
		d.offsets = append(d.offsets, uint32(len(d.buf)))
	} else {
		shared = commonPrefix(d.prev, term)
	}
	d.buf = binary.AppendUvarint(d.buf, uint64(shared))
	d.buf = binary.AppendUvarint(d.buf, uint64(len(term)-shared))
	d.buf = append(d.buf, term[shared:]...)
	d.buf = binary.AppendUvarint(d.buf, v)
	d.prev = append(d.prev[:0], term...)
	d.n++
	return nil
}

// finish returns the dictionary's bytes.
func (d *dictWriter) finish() []byte {
	for _, o := range d.offsets {
		d.buf = binary.LittleEndian.AppendUint32(d.buf, o)
	}
	return d.buf
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n && binary.LittleEndian.Uint64(a[i:]) == binary.LittleEndian.Uint64(b[i:]) {
		i += 8
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// blockDict reads a version 3 dictionary. Its methods are safe for
// concurrent use.
type blockDict struct {
	blocks  []byte // the blocks
	offsets []byte // the blocks' offsets, 4 bytes each
	n       uint64 // terms
}

// loadBlockDict checks b, a dictionary of n terms, and returns its reader:
// every block's offset within the blocks, ascending, the first at 0.
func loadBlockDict(b []byte, n uint64) (*blockDict, error) {
	nb := (n + dictBlock - 1) / dictBlock
	if nb > uint64(len(b))/4 {
		return nil, corrupt("dictionary: %d bytes for %d terms", len(b), n)
	}
	d := &blockDict{blocks: b[:uint64(len(b))-4*nb], offsets: b[uint64(len(b))-4*nb:], n: n}
	prev := -1
	for i := range int(nb) {
		o := int(d.offset(i))
		if (i == 0) != (o == 0) || o <= prev || o >= len(d.blocks) {
			return nil, corrupt("dictionary: block %d at %d (previous at %d, blocks end at %d)", i, o, prev, len(d.blocks))
		}
		prev = o
	}
	if nb == 0 && len(d.blocks) != 0 {
		return nil, corrupt("dictionary: %d bytes and no terms", len(d.blocks))
	}
	return d, nil
}

func (d *blockDict) offset(i int) uint32 { return binary.LittleEndian.Uint32(d.offsets[4*i:]) }

func (d *blockDict) numBlocks() int { return len(d.offsets) / 4 }

// blockEnd returns where block i ends.
func (d *blockDict) blockEnd(i int) int {
	if i+1 < d.numBlocks() {
		return int(d.offset(i + 1))
	}
	return len(d.blocks)
}

// dictCursor reads the terms of a blockDict in order.
type dictCursor struct {
	d     *blockDict
	blk   int    // the current block
	pos   int    // the next term's offset in d.blocks
	end   int    // the current block's end
	left  int    // terms of the file after the current one (for the last block's count)
	inBlk int    // terms read from the current block
	key   []byte // the current term
	val   uint64
}

// seekBlock positions c before the first term of block i.
func (c *dictCursor) seekBlock(i int) {
	c.blk, c.pos, c.end = i, int(c.d.offset(i)), c.d.blockEnd(i)
	c.inBlk = 0
	c.left = int(c.d.n) - i*dictBlock
	c.key = c.key[:0]
}

// next reads the next term into c.key and c.val; ok is false at the end of
// the dictionary. Errors wrap ErrCorrupt.
func (c *dictCursor) next() (ok bool, err error) {
	if c.left <= 0 {
		return false, nil
	}
	if c.inBlk == dictBlock {
		c.seekBlock(c.blk + 1)
	}
	b := c.d.blocks[:c.end]
	shared, k := binary.Uvarint(b[c.pos:])
	if k <= 0 {
		return false, corrupt("dictionary: block %d: bad prefix length", c.blk)
	}
	c.pos += k
	suffix, k := binary.Uvarint(b[c.pos:])
	if k <= 0 {
		return false, corrupt("dictionary: block %d: bad suffix length", c.blk)
	}
	c.pos += k
	if shared > uint64(len(c.key)) || (c.inBlk == 0 && shared != 0) || suffix > uint64(len(b)-c.pos) {
		return false, corrupt("dictionary: block %d: term of %d+%d bytes", c.blk, shared, suffix)
	}
	c.key = append(c.key[:shared], b[c.pos:c.pos+int(suffix)]...)
	c.pos += int(suffix)
	c.val, k = binary.Uvarint(b[c.pos:])
	if k <= 0 {
		return false, corrupt("dictionary: block %d: bad value", c.blk)
	}
	c.pos += k
	c.inBlk++
	c.left--
	if (c.inBlk == dictBlock || c.left == 0) && c.pos != c.end {
		return false, corrupt("dictionary: block %d ends at %d, its terms at %d", c.blk, c.end, c.pos)
	}
	return true, nil
}

// firstTerm returns block i's first term (its bytes in the file).
func (d *blockDict) firstTerm(i int) ([]byte, error) {
	o, end := int(d.offset(i)), d.blockEnd(i)
	b := d.blocks[o:end]
	shared, k := binary.Uvarint(b)
	if k <= 0 || shared != 0 {
		return nil, corrupt("dictionary: block %d: bad first term", i)
	}
	n, k2 := binary.Uvarint(b[k:])
	if k2 <= 0 || n > uint64(len(b)-k-k2) {
		return nil, corrupt("dictionary: block %d: bad first term", i)
	}
	return b[k+k2 : k+k2+int(n)], nil
}

// blockOf returns the last block whose first term is at most term (-1:
// term sorts before every term).
func (d *blockDict) blockOf(term []byte) (int, error) {
	lo, hi := 0, d.numBlocks() // the answer is in [lo-1, hi)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		ft, err := d.firstTerm(m)
		if err != nil {
			return 0, err
		}
		if bytes.Compare(ft, term) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1, nil
}

// get returns term's value.
func (d *blockDict) get(c *dictCursor, term []byte) (v uint64, ok bool, err error) {
	i, err := d.blockOf(term)
	if err != nil || i < 0 {
		return 0, false, err
	}
	c.d = d
	c.seekBlock(i)
	for c.inBlk < dictBlock {
		ok, err := c.next()
		if err != nil || !ok {
			return 0, false, err
		}
		switch bytes.Compare(c.key, term) {
		case 0:
			return c.val, true, nil
		case 1:
			return 0, false, nil
		}
	}
	return 0, false, nil
}

// seek positions c before the first term at or after start (nil: the
// first term).
func (d *blockDict) seek(c *dictCursor, start []byte) (pending bool, err error) {
	c.d = d
	if d.numBlocks() == 0 {
		c.left = 0
		return false, nil
	}
	i := 0
	if start != nil {
		if i, err = d.blockOf(start); err != nil {
			return false, err
		}
		i = max(i, 0)
	}
	c.seekBlock(i)
	if start == nil {
		return false, nil
	}
	for {
		ok, err := c.next()
		if err != nil || !ok {
			return false, err
		}
		if bytes.Compare(c.key, start) >= 0 {
			return true, nil // the current term is the first one
		}
	}
}
