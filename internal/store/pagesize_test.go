package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestPageSizes: a store made now has PageSize pages; one made with 4 KiB pages (before
// PageSize) keeps them. Either passes CheckFile and the freelist check and opens from its
// second meta page when the first is damaged (the checks must find that page one page of
// the file's own size in, not of the OS's), and reads back what was written.
func TestPageSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		make int // page size the file is made with (0: Open makes it)
		want int
	}{
		{"new", 0, PageSize},
		{"4KiB", 4096, 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "store.db")
			if tc.make > 0 {
				b, err := bolt.Open(path, 0o644, &bolt.Options{PageSize: tc.make})
				if err != nil {
					t.Fatal(err)
				}
				b.Close()
			}
			db, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var puts []Put
			for i := range 300 {
				id := fmt.Sprintf("d%04d", i)
				puts = append(puts, Put{ID: id, Record: &Record{Text: fmt.Sprint("text of ", i)}, Units: []string{id}, Vecs: [][]float32{{float32(i), 1, 2}}})
			}
			// Two transactions (ids 2 and 3): the second meta page (bbolt writes transaction n's
			// to page n%2) is the current one.
			for _, part := range [][]Put{puts[:150], puts[150:]} {
				if _, err := db.Write("c", part, len(part), len(part)); err != nil {
					t.Fatal(err)
				}
			}
			if got := db.bolt.Info().PageSize; got != tc.want {
				t.Errorf("page size %d, want %d", got, tc.want)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			// Damage the first meta page (the older one).
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte{0xff, 0xff}, 16+40); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if err := CheckFile(path); err != nil {
				t.Fatalf("CheckFile with the first meta page damaged: %v", err)
			}
			if err := checkFreelist(path); err != nil {
				t.Fatalf("checkFreelist with the first meta page damaged: %v", err)
			}
			db, err = Open(path, Options{})
			if err != nil {
				t.Fatalf("open with the first meta page damaged: %v", err)
			}
			defer db.Close()
			if got := db.bolt.Info().PageSize; got != tc.want {
				t.Errorf("reopened: page size %d, want %d", got, tc.want)
			}
			r, _, err := db.Document("c", "d0299")
			if err != nil || r == nil || r.Text != "text of 299" {
				t.Fatalf("Document after reopening: %+v, %v", r, err)
			}
		})
	}
}
