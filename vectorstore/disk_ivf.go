package vectorstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"unsafe"

	"github.com/agentmem/memory/internal/topk"
	"github.com/agentmem/memory/internal/vecmath"
)

// The disk index's inverted lists (IndexConfig.Params["nlist"] > 0): k-means centroids
// trained on the first rows written, each row assigned to its nearest centroid (by inner
// product; the centroids are normalised for Cosine), and a quantized search scans only the
// codes of the nprobe lists whose centroids are nearest the query, then rescores as
// usual. Binary codes are then the signs of each row's residual (row - its centroid),
// compared with the signs of the query's residual to the same centroid: the signs of the
// rows themselves mostly say which cluster a row is in, which the list already says. The centroids live in ivf-G.bin ("MVIVF001", nlist, dim, nlist x dim float32),
// each segment's list numbers in seg-NNNNNN.ivl (a uint32 a row), both checked like the
// other files; the lists themselves are built in memory on open (4 bytes a row).
const diskIVFMagic = "MVIVF001"

// diskKMeansIters is how many k-means rounds train the centroids.
const diskKMeansIters = 8

// trainCentroids runs k-means (inner-product assignment, normalised means for Cosine) on
// up to 256 x nlist of the count rows, drawn at even steps.
func (x *DiskIndex) trainCentroids(count int, row func(i int) []float32) []float32 {
	d, k := x.dim, x.nlist
	ns := min(count, 256*k)
	sample := make([][]float32, ns)
	for i := range sample {
		sample[i] = row(int(int64(i) * int64(count) / int64(ns)))
	}
	cent := make([]float32, k*d)
	rng := rand.New(rand.NewPCG(uint64(count), uint64(k)))
	for c, i := range rng.Perm(ns)[:min(k, ns)] {
		copy(cent[c*d:(c+1)*d], sample[i])
	}
	assign := make([]int32, ns)
	for range diskKMeansIters {
		x.assignTo(cent, sample, assign)
		sums := make([]float64, k*d)
		cnt := make([]int, k)
		for i, c := range assign {
			cnt[c]++
			s := sums[int(c)*d : int(c+1)*d]
			for j, v := range sample[i] {
				s[j] += float64(v)
			}
		}
		for c := range k {
			if cnt[c] == 0 { // an empty list takes a random row
				copy(cent[c*d:(c+1)*d], sample[rng.IntN(ns)])
				continue
			}
			for j := range d {
				cent[c*d+j] = float32(sums[c*d+j] / float64(cnt[c]))
			}
			if x.metric == Cosine {
				vecmath.NormalizeInto(cent[c*d:(c+1)*d], cent[c*d:(c+1)*d])
			}
		}
	}
	return cent
}

// assignTo sets out[i] to the centroid of cent nearest rows[i] (the flat index's batch
// search with k = 1).
func (x *DiskIndex) assignTo(cent []float32, rows [][]float32, out []int32) {
	d := x.dim
	k := len(cent) / d
	fl := &FlatIndex{dim: d, metric: InnerProduct, threads: x.threads, data: cent, ids: make([]string, k)}
	for c := range k {
		fl.ids[c] = fmt.Sprintf("%08d", c) // ties: the lower list
	}
	const chunk = 1 << 14
	for lo := 0; lo < len(rows); lo += chunk {
		hi := min(lo+chunk, len(rows))
		res, err := fl.SearchBatch(context.Background(), rows[lo:hi], 1, nil)
		for i := range hi - lo {
			c := 0
			if err == nil && len(res[i]) == 1 {
				c, _ = strconv.Atoi(res[i][0].ID) // decimal (fmt.Sscan would read "0...": octal)
			}
			out[lo+i] = int32(c)
		}
	}
}

// writeCentroids writes ivf-G.bin.
func (x *DiskIndex) writeCentroids(m *diskMeta) (*diskFileMeta, error) {
	b := make([]byte, 24, 24+4*len(x.centroids))
	copy(b, diskIVFMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(x.nlist))
	binary.LittleEndian.PutUint64(b[16:], uint64(x.dim))
	b = append(b, float32Bytes(x.centroids)...)
	fm := &diskFileMeta{Name: fmt.Sprintf("ivf-%d.bin", m.Gen), Bytes: int64(len(b)), CRC: crc32.Checksum(b, diskCastagnoli)}
	path := filepath.Join(x.dir, fm.Name)
	if err := diskWriteAtomic(path, b); err != nil {
		return nil, err
	}
	return fm, stampFile(path, fm)
}

// loadCentroids reads and checks ivf-G.bin.
func (x *DiskIndex) loadCentroids(fm diskFileMeta) error {
	f, err := x.openChecked(fm, true)
	if err != nil {
		return err
	}
	defer f.Close()
	b := make([]byte, fm.Bytes)
	if _, err := io.ReadFull(f, b); err != nil {
		return x.corrupt("%s: %v", fm.Name, err)
	}
	if len(b) != 24+4*x.nlist*x.dim || string(b[:8]) != diskIVFMagic ||
		binary.LittleEndian.Uint64(b[8:]) != uint64(x.nlist) || binary.LittleEndian.Uint64(b[16:]) != uint64(x.dim) {
		return x.corrupt("%s: bad header", fm.Name)
	}
	x.centroids = make([]float32, x.nlist*x.dim)
	copy(float32Bytes(x.centroids), b[24:])
	if err := vecmath.Check(x.centroids, len(x.centroids)); err != nil {
		return x.corrupt("%s: %v", fm.Name, err)
	}
	return nil
}

// addToLists appends ordinals [lo, hi) (in segments) to their lists.
func (x *DiskIndex) addToLists(lo, hi int) error {
	if x.lists == nil {
		x.lists = make([][]int32, x.nlist)
	}
	for o := lo; o < hi; o++ {
		s := x.segs[o/x.segRows]
		c := s.ivl[o%x.segRows]
		if int(c) >= x.nlist {
			return x.corrupt("%s: list %d of %d", s.meta.IVL.Name, c, x.nlist)
		}
		x.lists[c] = append(x.lists[c], int32(o))
	}
	return nil
}

// probe returns the nprobe lists whose centroids score best against q.
func (x *DiskIndex) probe(q []float32, nprobe int) []int32 {
	scores := make([]float32, x.nlist)
	flatDots(q, x.centroids, scores)
	h := topk.New(min(nprobe, x.nlist), func(a, b int32) bool { return a < b })
	for c, s := range scores {
		h.Offer(s, int32(c))
	}
	items := h.Sorted()
	out := make([]int32, len(items))
	for i, it := range items {
		out[i] = it.Value
	}
	return out
}

// uint32Bytes views v as its bytes.
func uint32Bytes(v []uint32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
}
