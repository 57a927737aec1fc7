// Package postings encodes and decodes the postings list of one term: the
// documents it occurs in, strictly rising uint32s, each with its frequency
// (a uint32 >= 1). Document lengths are not part of a list.
//
// Postings are cut into blocks of BlockSize (128); the last block holds
// the remaining 1..128. In a block the document gaps and the frequencies
// are each bit-packed at one width (frame of reference), so a reader
// decodes a block into caller-owned slices with no per-value branches. A
// skip table ahead of the blocks gives each block's last document, so a
// reader can find the block holding a document (Seek) without decoding
// the blocks before it.
//
// # Byte layout
//
// uvarint is the unsigned LEB128 varint of encoding/binary. A list is
//
//	list    = count entry[B] block[B]
//	count   = uvarint N, the number of postings, 0 <= N <= 2^32
//	          B = ceil(N/128) blocks; block i holds n_i = 128 postings,
//	          except block B-1, which holds N - 128*(B-1)
//	entry   = last widths check        (the skip table: B entries)
//	last    = uvarint, the last document of the block, absolute, < 2^32
//	widths  = byte W0, then byte W1 if needed:
//	          W0 bits 0..5: DW, the doc width, 0..32;
//	          W0 bits 6..7: FW, the freq width, if 0..2; if 3, the freq
//	          width is W1, 3..32
//	check   = byte, the XOR of the entry's other bytes (last, widths) and
//	          of every byte of its block
//	block   = docbits freqbits         (no header; the entry describes it)
//	docbits = n_i values at DW bits, ceil(n_i*DW/8) bytes: value k is
//	          doc[k] - doc[k-1] - 1, where doc[-1] is the last document of
//	          the previous block, or base-1 for block 0 (so the first value
//	          of a list is its first document less base). base is not in the
//	          bytes: it is 0 unless writer and reader agree on another
//	          (ListWriter.SetBase, List.ResetBase), a bound the caller knows
//	          the list's documents lie above
//	freqbits= n_i values at FW bits, ceil(n_i*FW/8) bytes: freq[k] - 1
//
// Packing: the values form a little-endian bit stream; value k occupies
// stream bits k*W .. k*W+W-1 (low bit first) and stream bit j is bit j%8
// of byte j/8. The unused high bits of the last byte are zero when
// written and ignored when read. Width 0 takes no bytes: every value is
// 0, i.e. documents one apart, or frequencies all 1. The writer uses the
// smallest width that holds every value; a reader accepts any width that
// fits the values. The empty list is the single byte 0x00.
//
// Example: documents 3, 5, 6 with frequencies 1, 4, 1 encode as
// 03 06 82 8f 07 0c: count 3, last 6, widths 0x82 (DW 2, FW 2), check,
// docbits 3, 1, 0 at 2 bits (0x07), freqbits 0, 3, 0 at 2 bits (0x0c).
//
// A list is self-delimiting only given its length: OpenList needs exactly
// the list's bytes. Storing lists back to back needs their lengths or
// offsets elsewhere.
//
// # Damage
//
// No input makes this package panic, read outside the given bytes, or
// allocate more than a small multiple of their length. OpenList checks the
// count, every entry's varint and widths, that the last documents rise
// with room for each block's postings (last[i] - last[i-1] >= n_i), and
// that the blocks' sizes add up to exactly the bytes after the skip table,
// so every truncation or extension of a list is reported. DecodeBlock
// checks the block's check byte, then that its documents, counted from the
// previous block's last document, end exactly at its own last document
// (each value adds at least 1, so they rise strictly and cannot wrap),
// and that no frequency is 2^32. Every error reporting damage wraps
// ErrCorrupt.
//
// What this catches: any change confined to one byte of a block, or to
// one byte of its entry that leaves the entry's length alone (any number
// of flipped bits in that byte, documents or frequencies), makes the check
// byte disagree; any change to a single packed document gap, or to a last
// document, moves where the documents end. Changes that alter how the
// skip table parses (a varint's continuation bit, the freq-width escape,
// the count) are caught by the size and order checks or, in every case the
// tests found, by the check bytes: the tests change every byte of sample
// lists with all 255 XOR masks and see every change reported. What it cannot promise: damage to several bytes
// whose effects cancel in both the XOR and the sum of gaps (say two
// packed gaps swapped) decodes silently to other documents between the
// same bounds or to other frequencies, and damage to the skip table is
// only seen when a block next to it is decoded: Seek trusts the table, so
// a damaged last document can make Seek skip a block, or return Blocks(),
// without an error.
package postings
