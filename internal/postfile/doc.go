// Package postfile writes and reads the file that holds one text field's
// inverted index for one search segment: the segment's documents (numbered
// densely 0..N-1) with each one's field length, a term dictionary, and per
// term its postings, cut into chunks the way zap v16 cuts them, each chunk
// with the Pareto frontier of its (frequency, length) pairs for block-max
// scoring. The postings themselves are lists of the internal/postings codec.
//
// A Writer builds a file from terms in order (segment building); Merge
// builds one from other files with documents renumbered or dropped
// (compaction), streaming term by term; a Reader reads one from its bytes
// (an mmap), and Reader.Dictionary adapts it to Bleve's segment API.
//
// # Chunks
//
// For a term with count postings in a segment of N documents,
//
//	span   = N / (count/1024 + 1)      (integer division; count <= N, so span >= 1)
//	chunks = (N-1)/span + 1
//
// unless the writer set Options.FixedSpan (tests): then span is that for
// every term.
//
// and chunk c holds the postings whose document is in [c*span, (c+1)*span);
// some chunks may be empty. Each chunk stores its posting count, its
// frontier and its postings as one list.
//
// The frontier of a chunk is the set of its (freq, length) pairs that no
// other posting of the chunk dominates (has freq' >= freq and length' <=
// length, one of them strict), duplicates collapsed, listed with the
// frequency strictly falling and the length strictly falling.
//
// # Byte layout
//
// uvarint is encoding/binary's unsigned varint; fixed-width integers are
// little-endian. A file is
//
//	file     = header lengths entries dict footer
//	header   = "AMPOSTF1" (8 bytes)
//	lengths  = N values of W bytes each (W = 1, 2 or 4, the least that holds
//	           the largest length): the field length of document 0, 1, ...
//	entries  = entry*: one per term not stored inline, in term order, back
//	           to back
//	dict     = every term, strictly ascending, with its value: blocks of
//	           32 terms, then the blocks' offsets (version 3, dict.go:
//	           each term front-coded against the one before it in its
//	           block, a lookup binary-searches the blocks' first terms);
//	           in a version 2 file, a vellum FST mapping each term to its
//	           value (still read; this package writes version 3)
//	footer   = 84 bytes, below
//
// A dictionary value v is either
//
//	inline   v&1 == 1: the term's only posting, document uint32(v>>1) with
//	         frequency (v>>33)+1. Used for a term with exactly one posting
//	         whose frequency is at most 2^31; no entry.
//	entry    v&1 == 0: v>>1 is the offset of the term's entry in entries.
//
// An entry is
//
//	entry    = count chunkhdr[C] list*
//	count    = uvarint, the term's postings, 1 <= count <= N
//	           (span and C follow from count and N as above)
//	chunkhdr = n [len front]
//	n        = uvarint, the chunk's postings; absent for the last chunk,
//	           whose count is count minus the others'. An empty chunk is the
//	           single byte 0 (the last, when empty, takes no byte).
//	len      = uvarint, the byte length of the chunk's list (n > 0 only)
//	front    = pair+                   (n > 0 only; 1 to n pairs)
//	pair     = a b, two uvarints. a>>1 is the first pair's frequency
//	           (>= 1), or for a later pair df: its frequency is the
//	           previous one's minus df+1; b is the first pair's length, or
//	           dl: the length is the previous one's minus dl+1 (so both fall
//	           strictly; frequencies stay >= 1, lengths >= 0). a&1 is 1 if
//	           another pair follows.
//	list*    = the non-empty chunks' lists (internal/postings), in chunk
//	           order, of the lengths given by len; chunk c's list counts
//	           its documents from base c*span (postings.ListWriter.SetBase),
//	           so its first block packs no wider than its gaps
//
// The footer, at offset size-84, is
//
//	 0  u64  N, documents (0 <= N <= 2^32)
//	 8  u64  terms (equal to the dictionary's; 0 when N is)
//	16  u64  offset of lengths (8)        24  u64  its length (N*W)
//	32  u64  offset of entries            40  u64  its length
//	48  u64  offset of dict               56  u64  its length
//	64  u32  CRC-32C (Castagnoli) of dict
//	68  u8   W
//	69  u16  fixed span (Options.FixedSpan; 0: the rule above)
//	71  u8   zero
//	72  u32  format version (3; 2 had an FST dictionary, 1 counted every
//	         list's documents from 0)
//	76  4    "PSTF"
//	80  u32  CRC-32C of every byte of the file before this field
//
// The sections tile the file: each starts where the previous ends, and the
// dictionary ends where the footer starts.
//
// # Damage
//
// No input makes this package panic, read outside the given bytes, or
// allocate more than a small multiple of their length (or of a term's
// postings count, which is bounded by them). Open checks the magics, the
// version, that the sections tile the file exactly (so any truncation or
// extension is reported) and the dictionary's own CRC, because a damaged
// dictionary misleads lookups (a version 2 FST can make vellum read out of
// range or walk a cycle; a block's first term out of order hides terms
// from the binary search), and a version 3 dictionary's block offsets.
// Open does not checksum the rest; Verify checks the whole file's
// CRC, and Check additionally decodes and cross-checks every term.
// Reader.Term checks what it reads from an entry (counts against the
// chunk geometry, frontier order and bounds, list extents inside the
// entries section); Term.Chunk opens the chunk's list and checks its
// count against the entry and its documents' range against the chunk's:
// the last document of the last block below min((c+1)*span, N), and the
// first block's last document leaving room above c*span. The first
// document of a chunk is inside the packed bits, so that it is not below
// c*span is checked by whoever decodes block 0 (the Dictionary adapter
// and Check do; the postings codec's check byte and gap sum already catch
// any single damaged byte there).
//
// Every error for damaged bytes wraps ErrCorrupt; those that come from
// the postings codec wrap postings.ErrCorrupt as well. Errors from
// postings.List.DecodeBlock called by the user on a list opened by
// Term.Chunk wrap only postings.ErrCorrupt.
package postfile
