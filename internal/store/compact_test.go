package store

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestAppendsFillPages: documents written in id order (an ingest) fill the docs pages
// bbolt splits (bbolt's default left them half empty: a store.db twice the size), while
// writes among stored ids keep bbolt's default; and the change log holds each change's
// op and index id only, never a copy of the text.
func TestAppendsFillPages(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	text := func(i int) string {
		return strings.Repeat(fmt.Sprintf("Passage %d tells of cells %d that grow in %d mM glucose. ", i, i*7, i%13), 12)
	}
	write := func(ids []string) {
		var puts []Put
		for _, id := range ids {
			puts = append(puts, Put{ID: id, Record: &Record{Title: "t " + id, Text: text(len(id) * 31)}, Units: []string{id}})
		}
		if _, err := db.Write("c", puts, len(puts), len(puts)); err != nil {
			t.Fatal(err)
		}
	}
	for lo := 0; lo < 3000; lo += 250 {
		var ids []string
		for i := lo; i < lo+250; i++ {
			ids = append(ids, fmt.Sprintf("p%06d", 2*i))
		}
		write(ids)
	}
	fill := func() float64 {
		var s bolt.BucketStats
		if err := db.view(func(tx *bolt.Tx) error {
			s = tx.Bucket(bkCols).Bucket([]byte("c")).Bucket(bkDocs).Stats()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return float64(s.LeafInuse) / float64(s.LeafAlloc)
	}
	if f := fill(); f < 0.8 {
		t.Fatalf("docs written in id order fill their pages to %.2f, want >= 0.8", f)
	}
	// Ids among the stored ones: bbolt's default split, pages with room for more.
	var ids []string
	for i := 0; i < 3000; i += 2 {
		ids = append(ids, fmt.Sprintf("p%06d", 2*i+1))
	}
	write(ids)
	if f := fill(); f > 0.8 {
		t.Fatalf("docs inserted among stored ids fill their pages to %.2f: splits at random places should leave room", f)
	}
	n := 0
	if err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bkCols).Bucket([]byte("c")).Bucket(bkChanges).ForEach(func(k, v []byte) error {
			n++
			if len(v) != 1+len("p000000") || (v[0] != opPut && v[0] != opDel) || !strings.HasPrefix(string(v[1:]), "p") {
				return fmt.Errorf("change %x holds %q, want an op and an index id", k, v)
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if n != 4500 {
		t.Fatalf("%d changes logged, want 4500", n)
	}
}
