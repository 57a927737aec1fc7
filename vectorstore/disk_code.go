package vectorstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/agentmem/memory/internal/vecmath"
)

// Binary codes of a [DiskIndex] (IndexConfig.Params["code"]). Both are a bit a dimension
// (ceil(dim/64) uint64 words a row), scored against the query's float32 values
// (binaryLUT); they differ in what the bits are the signs of.
const (
	// DiskCodeAuto keeps what an existing index records, and chooses for a new one:
	// DiskCodeRotated with every padded bit for an index without rows of its own
	// (IndexConfig.Rows), DiskCodeSigns for one with its rows. The default.
	//
	// Measured (bench/diskquant -store int8, 200k x 768, int8 store, no lists, query set
	// 0, recall@10 against exact float32 at oversample 32 / 64): on clustered vectors signs 0.861 /
	// 0.962, rotated (dim bits) 0.831 / 0.952, rotated (every padded bit) 0.879 / 0.965;
	// on hash:768 vectors signs 0.076 / 0.126, rotated 0.909 / 0.931, padded 0.937 /
	// 0.944. Rotated codes of dim bits lose a little on clustered vectors, hence signs
	// stay the default of indexes with their own rows (their files unchanged); every
	// padded bit loses nothing there and takes 32 bytes more a vector at 768 dimensions
	// (128 instead of 96), within the row-less budget of about 1,000 bytes a vector.
	DiskCodeAuto = 0
	// DiskCodeSigns keeps the signs of the (for Cosine normalised) vector's own
	// components: bit j is v[j] > 0. What every index written before the rotated codes
	// keeps (its disk.json names no code). It ranks dense vectors whose components all
	// carry signal, and not sparse ones (a component that is 0 has no sign).
	DiskCodeSigns = 1
	// DiskCodeRotated keeps the signs of a fixed pseudo-random rotation of the vector
	// (vecmath.Rotation, seeded from Params["codeseed"] and recorded in disk.json): sign
	// random projections, whose agreement estimates the angle between any two vectors,
	// sparse and heavy-tailed ones (the hash embedder's) included. The query is rotated
	// the same way before the scan. The bits are the first dim of the rotated vector
	// (padded to a power of two), so the codes take what sign codes take; with
	// Params["codebits"] set to the padded dimension (the next power of two from dim),
	// every bit of it: more bytes a row (128 instead of 96 at 768 dimensions), better
	// ranking.
	DiskCodeRotated = 2
)

// diskCodeSeedDefault is the rotation's seed when Params["codeseed"] is not set.
const diskCodeSeedDefault = 0x6d656d6f7279 // "memory"

// Names of the binary codes in disk.json ("code"; absent: signs, as written before).
const (
	diskCodeNameSigns   = "signs"
	diskCodeNameRotated = "rotated"
)

// diskCodeName is the name disk.json records for code kind c ("" for signs: the file of a
// sign-coded index stays what it was before codes had names).
func diskCodeName(c int) string {
	if c == DiskCodeRotated {
		return diskCodeNameRotated
	}
	return ""
}

// setCode makes x keep codes of kind c (DiskCodeSigns or DiskCodeRotated) with the
// rotation of seed, of bitsN bits (0: dim; a rotated code may take the rotation's padded
// dimension).
func (x *DiskIndex) setCode(c int, seed uint64, bitsN int) error {
	x.code, x.codeSeed, x.rot, x.codeBits = c, seed, nil, x.dim
	if c != DiskCodeRotated {
		if bitsN != 0 && bitsN != x.dim {
			return fmt.Errorf("%w: disk: sign codes of %d bits (they have a bit a dimension: %d)", ErrBadConfig, bitsN, x.dim)
		}
		return nil
	}
	r, err := vecmath.NewRotation(x.dim, seed)
	if err != nil {
		return fmt.Errorf("%w: disk: rotated codes: %w", ErrBadConfig, err)
	}
	if bitsN != 0 && bitsN != x.dim && bitsN != r.Padded() {
		return fmt.Errorf("%w: disk: rotated codes of %d bits (%d or %d at %d dimensions)", ErrBadConfig, bitsN, x.dim, r.Padded(), x.dim)
	}
	x.rot, x.codeBits = r, cmp.Or(bitsN, x.dim)
	return nil
}

// loadCode takes the code kind disk.json records (m.Code, m.CodeSeed): unknown names and
// codes recorded for an index that keeps no binary codes are corrupt; a kind other than
// the one Params["code"] asks for (when it asks) is errDiskConfig.
func (x *DiskIndex) loadCode(m *diskMeta) error {
	var c int
	switch m.Code {
	case "", diskCodeNameSigns:
		c = DiskCodeSigns
		if m.CodeSeed != 0 || m.CodeBits != 0 {
			return x.corrupt("%s: sign codes with a rotation seed or bits", diskMetaFile)
		}
	case diskCodeNameRotated:
		c = DiskCodeRotated
	default:
		return x.corrupt("%s: unknown binary code %q", diskMetaFile, m.Code)
	}
	if !x.keepsBinary() {
		if m.Code != "" || m.CodeSeed != 0 || m.CodeBits != 0 {
			return x.corrupt("%s: binary code %q recorded for an index that keeps none", diskMetaFile, m.Code)
		}
		return nil
	}
	if x.codeParam != DiskCodeAuto && x.codeParam != c {
		return fmt.Errorf("%w: %s holds %s binary codes, Params asks for code %d", errDiskConfig, x.dir, x.codeKind(c), x.codeParam)
	}
	if x.seedParam && c == DiskCodeRotated && m.CodeSeed != x.codeSeed {
		return fmt.Errorf("%w: %s holds codes rotated with seed %d, Params asks for seed %d", errDiskConfig, x.dir, m.CodeSeed, x.codeSeed)
	}
	if x.bitsParam != 0 && x.bitsParam != cmp.Or(m.CodeBits, x.dim) {
		return fmt.Errorf("%w: %s holds codes of %d bits, Params asks for %d", errDiskConfig, x.dir, cmp.Or(m.CodeBits, x.dim), x.bitsParam)
	}
	if m.CodeBits == x.dim { // written as 0
		return x.corrupt("%s: code_bits %d", diskMetaFile, m.CodeBits)
	}
	if err := x.setCode(c, m.CodeSeed, m.CodeBits); err != nil {
		return x.corrupt("%s: %v", diskMetaFile, err)
	}
	return nil
}

// codeKind names a code kind for messages and SearchPlan.
func (x *DiskIndex) codeKind(c int) string {
	if c == DiskCodeRotated {
		return "rotated"
	}
	return "sign"
}

// encodeBinary writes the binary code of row r (as the index stores it: normalised for
// Cosine) to out; tmp is room for the rotated row (Padded values, rotated codes only).
func (x *DiskIndex) encodeBinary(r []float32, out []uint64, tmp []float32) {
	if x.rot == nil {
		binaryCode(r, out)
		return
	}
	binaryCode(x.rot.Apply(tmp, r)[:x.codeBits], out)
}

// binaryView returns what the rows' binary codes are the signs of, for query q: q itself
// for sign codes, the first codeBits values of its rotation for rotated ones. A scan makes
// the query's nibble tables (binaryLUT) and, for the prefilter, its own code (binaryCode)
// from it: the rotation is applied once a query.
func (x *DiskIndex) binaryView(q []float32) []float32 {
	if x.rot == nil {
		return q
	}
	return x.rot.Apply(make([]float32, x.rot.Padded()), q)[:x.codeBits]
}

// rotScratch is room for encodeBinary's rotated row (nil for sign codes).
func (x *DiskIndex) rotScratch() []float32 {
	if x.rot == nil {
		return nil
	}
	return make([]float32, x.rot.Padded())
}

// codeRun is a range of one segment's rows that a code scan hands a worker.
type codeRun struct {
	seg    *diskSeg
	base   int32 // the ordinal of the segment's first row
	lo, hi int   // rows [lo, hi) of the segment
}

// hammingFilterRows is the most rows a call of hammingFilter takes.
const hammingFilterRows = 256

// hammingFilter writes to out the rows r of codes (rows of len(q) words, one after
// another; len(out) at least their number, at most hammingFilterRows) within Hamming
// distance cut of q, in order, and returns their count.
func hammingFilter(q, codes []uint64, cut int, out []int32) int {
	var dist [hammingFilterRows]int32
	n := len(codes) / max(len(q), 1)
	hammingDists(q, codes, dist[:n])
	m := 0
	for r, d := range dist[:n] {
		if int(d) <= cut {
			out[m] = int32(r)
			m++
		}
	}
	return m
}

// hammingDistsGeneric is hammingDists without a kernel: hamming row by row.
func hammingDistsGeneric(q, codes []uint64, out []int32) {
	W := len(q)
	if W == 0 {
		return
	}
	for r := 0; (r+1)*W <= len(codes); r++ {
		out[r] = int32(hamming(q, codes[r*W:(r+1)*W:(r+1)*W]))
	}
}

// hammingGeneric is the number of bits in which codes a and b (of one length) differ.
func hammingGeneric(a, b []uint64) int {
	a = a[:len(b)]
	var n0, n1, n2, n3 int
	i := 0
	for ; i+4 <= len(b); i += 4 {
		n0 += bits.OnesCount64(a[i] ^ b[i])
		n1 += bits.OnesCount64(a[i+1] ^ b[i+1])
		n2 += bits.OnesCount64(a[i+2] ^ b[i+2])
		n3 += bits.OnesCount64(a[i+3] ^ b[i+3])
	}
	for ; i < len(b); i++ {
		n0 += bits.OnesCount64(a[i] ^ b[i])
	}
	return n0 + n1 + n2 + n3
}

// hammingSample is how sparsely the prefilter's first pass samples the rows: the rows of
// every hammingSample-th block of hammingBlock ordinals (hammingSampled). Blocks, not
// every hammingSample-th row: a list's rows in order (OrderLists) or a segment's run are
// consecutive ordinals, read then as 6 KB stretches at 768 bits a code, streamed from
// memory as the scan reads them, where one row in eight was a cache miss each (the first
// pass cost three times the scan of every row at 21M x 768: BENCHMARKS §0zz).
const (
	hammingSample = 8
	hammingBlock  = 64
)

// hammingSampled reports whether the prefilter's first pass samples ordinal o.
func hammingSampled(o int32) bool { return (o/hammingBlock)%hammingSample == 0 }

// hammingWant is how many of sampled rows the prefilter's cut keeps within it, of a scan
// of rows rows keeping keep: twice keep, in the sample's proportion (at least one).
func hammingWant(keep, sampled, rows int) int {
	if rows <= 0 {
		return 1
	}
	return max(1, int((2*int64(keep)*int64(sampled)+int64(rows)-1)/int64(rows)))
}

// hammingCut is the prefilter's first pass (DiskSearchOptions.Prefilter): the Hamming
// distance to the query's code qc of the sampled rows (hammingSampled) of runs and of the
// probed inverted lists (rows rows in all), counted per distance over workers goroutines,
// and the smallest distance within which hammingWant of the sampled rows lie (the largest
// distance when fewer rows lie in runs and lists): about 2 x keep rows of the scan lie
// within it. Each
// range's code bytes are checked as the scan checks them; a list is packed (diskPack) as
// the scan would pack it.
func (x *DiskIndex) hammingCut(ctx context.Context, qc []uint64, runs []codeRun, lists []int32, rows, keep, workers int) (int, error) {
	W := x.codeWords()
	hists := make([][]int, workers)
	errs := make([]error, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		hists[w] = make([]int, 64*W+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := hists[w]
			for {
				i := int(next.Add(1)) - 1
				if i >= len(runs)+len(lists) {
					return
				}
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				if i >= len(runs) {
					if err := x.sampleList(lists[i-len(runs)], qc, h); err != nil {
						errs[w] = err
						return
					}
					continue
				}
				r := runs[i]
				if err := x.checkRange(r.seg, diskB1, r.lo*8*W, r.hi*8*W); err != nil {
					errs[w] = err
					return
				}
				sampleRun(r, qc, W, h)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return hammingCutOf(hists, keep, rows, 64*W), nil
}

// hammingCutOf is the cut of hammingCut from the counts per distance of its sample
// (hists: added up; distances 0 to most): the smallest distance within which hammingWant
// of the sampled rows lie, or most.
func hammingCutOf(hists [][]int, keep, rows, most int) int {
	sampled := 0
	for _, h := range hists {
		for _, n := range h {
			sampled += n
		}
	}
	want, sum := hammingWant(keep, sampled, rows), 0
	for d := range most + 1 {
		for _, h := range hists {
			sum += h[d]
		}
		if sum >= want {
			return d
		}
	}
	return most
}

// sampleRun counts in h the Hamming distance to qc of run r's sampled rows
// (hammingSampled), a block of consecutive rows at a time.
func sampleRun(r codeRun, qc []uint64, W int, h []int) {
	sampleCodes(r.seg.b1[r.lo*W:r.hi*W], r.base+int32(r.lo), qc, h)
}

// sampleCodes counts in h the Hamming distance to qc of the sampled rows (hammingSampled)
// of codes, rows of len(qc) words of consecutive ordinals from base: a block at a time,
// the blocks not sampled skipped whole.
func sampleCodes(codes []uint64, base int32, qc []uint64, h []int) {
	W := len(qc)
	n := len(codes) / W
	var dist [hammingBlock]int32
	for j := 0; j < n; {
		o := base + int32(j)
		if b := int(o / hammingBlock); b%hammingSample != 0 { // on to the next sampled block
			j += (hammingSample-b%hammingSample)*hammingBlock - int(o%hammingBlock)
			continue
		}
		end := min(n, j+hammingBlock-int(o%hammingBlock))
		hammingDists(qc, codes[j*W:end*W:end*W], dist[:])
		for _, dd := range dist[:end-j] {
			h[dd]++
		}
		j = end
	}
}

// sampleList counts in h the Hamming distance to qc of inverted list c's sampled rows
// (hammingSampled), from the list's packed codes (packing them
// first, as the scan does) or else from the segments.
func (x *DiskIndex) sampleList(c int32, qc []uint64, h []int) error {
	W := x.codeWords()
	p, err := x.pack(c, DiskBinary)
	if err != nil {
		return err
	}
	if p != nil {
		var dist [hammingBlock]int32
		for _, pc := range p.pieces {
			if n := pc.n; n > 0 && int(pc.at(n-1)-pc.at(0)) == n-1 { // ascending: consecutive ordinals (a run)
				sampleCodes(pc.b1[:n*W], pc.at(0), qc, h)
				continue
			}
			for r := 0; r < len(pc.ords); {
				if !hammingSampled(pc.ords[r]) {
					r++
					continue
				}
				end := r + 1 // a run of sampled rows, at most a block
				for end < len(pc.ords) && end-r < hammingBlock && hammingSampled(pc.ords[end]) {
					end++
				}
				hammingDists(qc, pc.b1[r*W:end*W:end*W], dist[:])
				for _, dd := range dist[:end-r] {
					h[dd]++
				}
				r = end
			}
		}
		return nil
	}
	for o := range x.lists[c].all() {
		if !hammingSampled(o) {
			continue
		}
		s, j := x.segs[int(o)/x.segRows], int(o)%x.segRows
		if err := x.codeAt(s, diskB1, j); err != nil {
			return err
		}
		h[hamming(qc, s.b1[j*W:(j+1)*W:(j+1)*W])]++
	}
	return nil
}
