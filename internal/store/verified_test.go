package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestCensusRecord: a writer's Close records the census of the file it leaves, and a later
// open of that very file takes it as read (no census); a branch page's child id pointed at
// another collection's leaf in place with the file's times put back, a copy of the file,
// a damaged record, or a write since, each make the next open take the census (and the
// damage is then ErrCorrupt); a writer that closes a damaged store removes the record.
func TestCensusRecord(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the census record is kept on Linux only")
	}
	orig := twinStore(t)
	rec := VerifiedFile(orig)
	if _, err := os.Stat(rec); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a census record though no collection was loaded: %v", err)
	}
	loadAndClose(t, orig, "a") // a writer that loads a collection takes the census
	if _, err := os.Stat(rec); err != nil {
		t.Fatalf("no census record after a writer's Close: %v", err)
	}
	load := func(path string, ro bool, col string) (vouched bool, err error) {
		t.Helper()
		db, err := Open(path, Options{NoSync: true, ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if cerr := db.Close(); cerr != nil {
				t.Fatal(cerr)
			}
		}()
		_, err = db.LoadCollection(col)
		return db.CensusVouched(), err
	}
	for _, ro := range []bool{true, false, true} { // a writer that wrote nothing keeps it
		if v, err := load(orig, ro, "a"); err != nil || !v {
			t.Fatalf("the file the writer left, read-only %v: vouched %v, %v", ro, v, err)
		}
	}
	cp := filepath.Join(t.TempDir(), "store.db")
	copyFile(t, orig, cp)
	copyFile(t, rec, VerifiedFile(cp))
	if v, err := load(cp, true, "a"); err != nil || v {
		t.Fatalf("a copy (another inode) with the record: vouched %v, %v", v, err)
	}

	// Damage in place, the times put back.
	pages, err := Pages(orig)
	if err != nil {
		t.Fatal(err)
	}
	var ab, bl PageInfo
	for _, p := range pages {
		switch {
		case p.Branch && p.Bucket == "col/a/docs":
			ab = p
		case !p.Branch && p.Bucket == "col/b/docs" && bl.ID == 0:
			bl = p
		}
	}
	if ab.ID == 0 || bl.ID == 0 {
		t.Fatalf("no branch page in a's docs or leaf in b's: %v", pages)
	}
	dmg := filepath.Join(t.TempDir(), "store.db")
	copyFile(t, orig, dmg)
	loadAndClose(t, dmg, "b") // this copy's own record
	if v, err := load(dmg, true, "a"); err != nil || !v {
		t.Fatalf("the copy after its writer closed: vouched %v, %v", v, err)
	}
	fi, err := os.Stat(dmg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(dmg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	var id [8]byte
	binary.LittleEndian.PutUint64(id[:], bl.ID)
	if _, err := f.WriteAt(id[:], ab.Offset+16+8); err != nil { // element 0's child page id
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(dmg, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if v, err := load(dmg, true, "a"); v || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged in place, times put back: vouched %v, %v (want the census, ErrCorrupt)", v, err)
	}
	if v, err := load(dmg, false, "a"); v || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged, writable: vouched %v, %v", v, err)
	}
	if _, err := os.Stat(VerifiedFile(dmg)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a writer closed a damaged store and left its record: %v", err)
	}

	// A damaged record; then a write, which the next Close records.
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(rec, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := load(orig, true, "a"); err != nil || v {
		t.Fatalf("a damaged record: vouched %v, %v", v, err)
	}
	db, err := Open(orig, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.LoadCollection("a"); err != nil {
		t.Fatal(err)
	}
	putDocs(t, db, "c", true, "x", "y")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"a", "c"} {
		if v, err := load(orig, true, col); err != nil || !v {
			t.Fatalf("after a write and Close, collection %s: vouched %v, %v", col, v, err)
		}
	}
}

// loadAndClose opens the store at path writable, loads collection col and closes it.
func loadAndClose(t *testing.T, path, col string) {
	t.Helper()
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.LoadCollection(col); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyFile copies src to dst (a new file: another inode, new times).
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, in); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}
