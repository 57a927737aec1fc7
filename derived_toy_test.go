package memory

import (
	"context"
	"sync"

	"github.com/agentmem/memory/internal/store"
)

// toyIndex is a derived index kept in memory: the set of live index ids with the length of
// each one's text. It is the whole of what a new kind of derived index needs: this type and
// one registration (withDerivedKind(toyKind), or a line in derivedKinds).
type toyIndex struct {
	mu   sync.Mutex
	seq  uint64
	lens map[string]int
	log  *[]string // every call, for the test
}

var toyKind = derivedKind{name: "toy", open: func(m *Memory, s *colState, dir string) (store.Index, error) {
	return &toyIndex{lens: map[string]int{}, log: &toyLog}, nil
}}

var toyLog []string

func (t *toyIndex) Seq() uint64 { return t.seq } // in memory: loaded on every open

func (t *toyIndex) Apply(_ context.Context, puts []store.Unit, dels []string, seq uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range dels {
		delete(t.lens, id)
		*t.log = append(*t.log, "del "+id)
	}
	for _, p := range puts {
		text, _, _, _ := p.Record.UnitText(p.Chunk)
		t.lens[p.ID] = len(text)
		*t.log = append(*t.log, "put "+p.ID)
	}
	t.seq = seq
	return nil
}

func (t *toyIndex) Count() (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.lens), nil
}

func (t *toyIndex) Close() error { return nil }
