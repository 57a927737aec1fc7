package memory

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/memtest"
	bolt "go.etcd.io/bbolt"
)

// toOldLayouts rewrites every record and vector of collection col of the closed store in
// dir in the layouts of earlier versions, whose checksums do not cover the key: records as
// 0x01 and a CRC-32C of the JSON (even keys' records) or bare JSON (odd), vectors as
// 0x7fc0cafe and a CRC-32C of the values (even) or bare values (odd).
func toOldLayouts(t *testing.T, dir, col string) int {
	t.Helper()
	tab := crc32.MakeTable(crc32.Castagnoli)
	db, err := bolt.Open(filepath.Join(dir, dbName), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bkCols).Bucket([]byte(col))
		for _, sub := range [][]byte{bkDocs, bkVecs} {
			bk := b.Bucket(sub)
			type kv struct{ k, v []byte }
			var all []kv
			i := 0
			if err := bk.ForEach(func(k, v []byte) error {
				var nv []byte
				switch {
				case string(sub) == string(bkDocs) && i%2 == 0:
					nv = append([]byte{0x01, 0, 0, 0, 0}, v[5:]...)
					binary.BigEndian.PutUint32(nv[1:], crc32.Checksum(v[5:], tab))
				case string(sub) == string(bkDocs):
					nv = append([]byte(nil), v[5:]...)
				case i%2 == 0:
					nv = append([]byte{0, 0, 0, 0, 0, 0, 0, 0}, v[8:]...)
					binary.LittleEndian.PutUint32(nv, 0x7fc0cafe)
					binary.BigEndian.PutUint32(nv[4:], crc32.Checksum(v[8:], tab))
				default:
					nv = append([]byte(nil), v[8:]...)
				}
				all = append(all, kv{append([]byte(nil), k...), nv})
				i++
				return nil
			}); err != nil {
				return err
			}
			for _, e := range all {
				if err := bk.Put(e.k, e.v); err != nil {
					return err
				}
			}
			n += len(all)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRebindOldLayouts: records and vectors an older version wrote (checksums that do not
// cover the key) are still read, check says how many there are, and check --repair
// rewrites them in the key-bound layouts, contents unchanged; from then on a flipped bit in
// one of their ids is ErrCorrupt.
func TestRebindOldLayouts(t *testing.T) {
	dir, emb := integrityStore(t)
	if n := toOldLayouts(t, dir, DefaultCollection); n != 600 {
		t.Fatalf("rewrote %d values in old layouts, want 600", n)
	}
	m := openT(t, dir, emb)
	before := map[string]Document{}
	for _, id := range memtest.IDs(t, m.Collection("")) {
		d, err := m.Get(bg, id)
		if err != nil {
			t.Fatalf("Get(%q) of an old-layout record: %v", id, err)
		}
		before[id] = d
	}
	rep, err := m.Check(bg, false)
	if err != nil {
		t.Fatal(err)
	}
	if st := find(t, rep, DefaultCollection, "store"); !strings.Contains(st.String(), "600 records or vectors written by an older version") {
		t.Fatalf("check does not count the old layouts: %s", st)
	}
	rep, err = m.Check(bg, true)
	if err != nil {
		t.Fatal(err)
	}
	if st := find(t, rep, DefaultCollection, "store"); !rep.OK() || !strings.Contains(st.String(), "600 records or vectors written by an older version rewritten") {
		t.Fatalf("check --repair: %v", rep.Indexes)
	}
	rep, err = m.Check(bg, false)
	if err != nil {
		t.Fatal(err)
	}
	if st := find(t, rep, DefaultCollection, "store"); !rep.OK() || strings.Contains(st.String(), "older version") {
		t.Fatalf("check after the rewrite: %s", st)
	}
	for id, want := range before {
		d, err := m.Get(bg, id)
		if err != nil || d.Text != want.Text || len(d.Embedding) != len(want.Embedding) || d.Embedding[0] != want.Embedding[0] {
			t.Fatalf("Get(%q) after the rewrite: %+v, %v; want %+v", id, d, err, want)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	e := locateElem(t, filepath.Join(dir, dbName), colPath(DefaultCollection, bkDocs), []byte("d1230"))
	xorByte(t, filepath.Join(dir, dbName), e.key+4, 0x01)
	m = openT(t, dir, emb, ReadOnly())
	if d, err := m.Get(bg, "d1231"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a flipped id of a rewritten record: %q, %v; want ErrCorrupt", d.ID, err)
	}
}
