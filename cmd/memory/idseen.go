package main

import "hash/maphash"

// idSeen remembers the ids a run has read and where each was first read, in 30 to 50
// bytes an id whatever its length (a map of the ids themselves took about 85: 1.8 GB of a
// 21M-passage run's memory). An id is kept as 128 bits of hash, two maphash sums under
// independent random seeds: two different ids are taken for one another with a chance
// under n²/2^129 for n ids (below 10^-24 at 21M).
type idSeen struct {
	seeds [2]maphash.Seed
	m     map[[2]uint64]uint64 // hash -> packed docLoc (packLoc)
	far   []docLoc             // locations too large to pack
}

func newIDSeen() *idSeen {
	return &idSeen{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, m: map[[2]uint64]uint64{}}
}

// Packed locations: the file in the top 23 bits, the line in the low 40; the top bit set
// marks an index into far.
const (
	locLineBits = 40
	locFileMax  = 1<<23 - 1
	locFar      = 1 << 63
)

func (s *idSeen) pack(l docLoc) uint64 {
	if l.file >= 0 && l.file <= locFileMax && l.line >= 0 && l.line < 1<<locLineBits {
		return uint64(l.file)<<locLineBits | uint64(l.line)
	}
	s.far = append(s.far, l)
	return locFar | uint64(len(s.far)-1)
}

func (s *idSeen) unpack(v uint64) docLoc {
	if v&locFar != 0 {
		return s.far[v&^locFar]
	}
	return docLoc{file: int(v >> locLineBits), line: int(v & (1<<locLineBits - 1))}
}

// key is the 128-bit hash of id that the map holds.
func (s *idSeen) key(id string) [2]uint64 {
	return [2]uint64{maphash.String(s.seeds[0], id), maphash.String(s.seeds[1], id)}
}

// add records id as read at l; when it was read before, it returns where, and true.
func (s *idSeen) add(id string, l docLoc) (docLoc, bool) {
	k := s.key(id)
	if v, ok := s.m[k]; ok {
		return s.unpack(v), true
	}
	s.m[k] = s.pack(l)
	return docLoc{}, false
}

// has reports whether id was read (added) before.
func (s *idSeen) has(id string) bool {
	_, ok := s.m[s.key(id)]
	return ok
}
