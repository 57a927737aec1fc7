package store

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentmem/memory/internal/smaps"
)

// mappedRSS returns the resident kB of this process's mappings of path.
func mappedRSS(t *testing.T, path string) int {
	kb, err := smaps.ResidentKB(func(p string) bool { return p == path })
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// TestDropResident: dropping the store mapping's resident pages empties the mapping's RSS
// (Linux), and, between reads and while a read transaction is open, changes nothing read;
// a nil store is a no-op.
func TestDropResident(t *testing.T) {
	(*DB)(nil).DropResident()
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var puts []Put
	for i := range 2000 {
		id := fmt.Sprintf("d%05d", i)
		puts = append(puts, Put{ID: id, Record: &Record{Text: fmt.Sprint("text of ", i)}, Units: []string{id}, Vecs: [][]float32{{float32(i), 1, 2}}})
	}
	if _, err := db.Write("c", puts, len(puts), len(puts)); err != nil {
		t.Fatal(err)
	}
	read := func(tx *Tx, i int) {
		t.Helper()
		v, err := tx.Vector("c", fmt.Sprintf("d%05d", i))
		if err != nil || len(v) != 3 || v[0] != float32(i) {
			t.Fatalf("vector %d: %v, %v", i, v, err)
		}
	}
	if runtime.GOOS == "linux" {
		if err := db.View(func(tx *Tx) error {
			for i := range 2000 {
				read(tx, i)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		before := mappedRSS(t, path)
		db.DropResident()
		if after := mappedRSS(t, path); before == 0 || after != 0 {
			t.Fatalf("resident kB of the store's mapping: %d after reading every record, %d after DropResident (want > 0, then 0)", before, after)
		}
	}
	for round := range 3 {
		db.DropResident()
		if err := db.View(func(tx *Tx) error {
			for i := round; i < 2000; i += 7 {
				read(tx, i)
				if i%500 == 0 {
					db.DropResident() // beside an open read transaction
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
