package store

import (
	"fmt"
	"reflect"
	"testing"
)

// TestEncodeRecordsParallel: records encoded on several cores (a large write) are the
// bytes EncodeRecord gives each, and a large Write stores every record as given.
func TestEncodeRecordsParallel(t *testing.T) {
	for _, n := range []int{0, 1, encodeParallelMin - 1, 2*encodeParallelMin + 7, 3000} {
		puts := make([]Put, n)
		for i := range puts {
			id := fmt.Sprintf("d%05d", i)
			puts[i] = Put{ID: id, Record: &Record{Title: "t " + id, Text: fmt.Sprintf("text %d ü", i*7), Metadata: map[string]any{"i": float64(i)}}, Units: []string{id}}
		}
		encs, err := encodeRecords(puts)
		if err != nil {
			t.Fatal(err)
		}
		if len(encs) != n {
			t.Fatalf("n=%d: %d encodings", n, len(encs))
		}
		for i, p := range puts {
			want, err := EncodeRecord(p.ID, p.Record)
			if err != nil {
				t.Fatal(err)
			}
			if string(encs[i]) != string(want) {
				t.Fatalf("n=%d: record %d encoded as %q, want %q", n, i, encs[i], want)
			}
		}
		if n == 0 {
			continue
		}
		db := openTestDB(t)
		if _, err := db.Write("c", puts, n, n); err != nil {
			t.Fatal(err)
		}
		if err := db.View(func(tx *Tx) error {
			for _, p := range puts {
				r, err := tx.Record("c", p.ID)
				if err != nil {
					return err
				}
				if r == nil || r.Title != p.Record.Title || r.Text != p.Record.Text || !reflect.DeepEqual(r.Metadata, p.Record.Metadata) {
					return fmt.Errorf("%s: stored %+v, want %+v", p.ID, r, p.Record)
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
	}
}
