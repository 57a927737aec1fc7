package store

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestLookupMapGrows: the mapping that checks missed lookups is made by the first miss,
// remade when the file grows past it (a miss whose pages lie beyond the first mapping
// is checked, not reported as damage past the end of the file), and dropped by Close.
func TestLookupMapGrows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			db.Close()
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	write := func(from, n int) {
		t.Helper()
		var puts []Put
		for i := from; i < from+n; i++ {
			id := fmt.Sprintf("d%06d", i)
			var sb strings.Builder
			for j := range 40 { // incompressible: the file must outgrow its first mapping
				fmt.Fprintf(&sb, "%016x", rng.Uint64()^uint64(j))
			}
			puts = append(puts, Put{ID: id, Record: &Record{Text: sb.String()}, Units: []string{id}})
		}
		if _, err := db.Write("c", puts, len(puts), len(puts)); err != nil {
			t.Fatal(err)
		}
	}
	miss := func(id string) {
		t.Helper()
		if err := db.View(func(tx *Tx) error {
			if tx.Has("c", id) {
				return fmt.Errorf("%s found", id)
			}
			_, err := tx.RecordMeta("c", id)
			return err
		}); err != nil && !strings.Contains(err.Error(), "not found") {
			t.Fatalf("miss of %s: %v", id, err)
		}
	}
	write(0, 100)
	miss("d000050x")
	v, ok := lookupMaps.Load(db.bolt)
	if !ok {
		t.Fatal("no shared mapping after a missed lookup")
	}
	first := len(v.(*lookupMap).data)
	for from := 100; len(v.(*lookupMap).data) <= first && from < 200_000; from += 20_000 {
		write(from, 20_000)
		miss(fmt.Sprintf("d%06dx", from+19_999)) // its leaf was written after the first mapping
	} // its leaf was written after the first mapping
	if got := len(v.(*lookupMap).data); first > 0 && got <= first {
		t.Fatalf("mapping of %d bytes, %d before the file grew", got, first)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	if _, ok := lookupMaps.Load(db.bolt); ok {
		t.Fatal("the shared mapping outlives Close")
	}
}
