package store

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// srcRec is a record whose source is src ("": none).
func srcRec(text, src string) *Record {
	r := &Record{Text: text}
	if src != "" {
		r.Metadata = map[string]any{SourceKey: src, "k": "v"}
	}
	return r
}

// srcPut is a Put of document id with source src; was is the source of the version it
// replaces (nil: a new document).
func srcPut(id, src string, was *string) Put {
	p := Put{ID: id, Record: srcRec("text of "+id, src), Units: []string{id}}
	if was != nil {
		p.Replaces, p.OldSource = true, *was
	}
	return p
}

func strp(s string) *string { return &s }

// mustSources lists col's sources from the index, failing unless the index answers.
func mustSources(t *testing.T, db *DB, col string) []string {
	t.Helper()
	srcs, ans, err := db.Sources(col)
	if err != nil || ans != SourcesListed {
		t.Fatalf("Sources: answer %v, err %v", ans, err)
	}
	return srcs
}

// agrees fails unless col's sources index, read through Tally, agrees with the records.
func agrees(t *testing.T, db *DB, col string) {
	t.Helper()
	tl, err := db.Tally(col, 0)
	if err != nil || tl.Sources != "" || tl.Damaged != 0 {
		t.Fatalf("tally: %+v, %v", tl, err)
	}
}

// TestSourcesKept: every kind of write keeps a new collection's sources index equal to
// its records' sources, in the same transaction.
func TestSourcesKept(t *testing.T) {
	db := openTestDB(t)
	steps := []struct {
		name string
		run  func() error
		want []string
	}{
		{"new documents", func() error {
			_, err := db.Write("c", []Put{srcPut("1", "/a", nil), srcPut("2", "/a", nil), srcPut("3", "/b", nil), srcPut("4", "", nil)}, 4, 4)
			return err
		}, []string{"/a", "/b"}},
		{"moved to another source", func() error {
			_, err := db.Write("c", []Put{srcPut("3", "/c", strp("/b"))}, 0, 0)
			return err
		}, []string{"/a", "/c"}},
		{"replaced, same source", func() error {
			_, err := db.Write("c", []Put{srcPut("1", "/a", strp("/a"))}, 0, 0)
			return err
		}, []string{"/a", "/c"}},
		{"one of two deleted", func() error {
			_, err := db.Delete("c", []string{"1", "missing"})
			return err
		}, []string{"/a", "/c"}},
		{"the last deleted", func() error {
			_, err := db.Delete("c", []string{"2"})
			return err
		}, []string{"/c"}},
		{"a sourceless document given one", func() error {
			_, err := db.Write("c", []Put{srcPut("4", "/d", strp(""))}, 0, 0)
			return err
		}, []string{"/c", "/d"}},
		{"replace: delete and put in one transaction", func() error {
			_, _, err := db.Replace("c", []Put{srcPut("5", "/e", nil)}, []string{"3"}, 1, 1)
			return err
		}, []string{"/d", "/e"}},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := mustSources(t, db, "c"); !slices.Equal(got, s.want) {
			t.Fatalf("%s: sources %q, want %q", s.name, got, s.want)
		}
		agrees(t, db, "c")
	}
	// A renamed collection takes its index along.
	if err := db.RenameCollection("c", "r", nil); err != nil {
		t.Fatal(err)
	}
	if got := mustSources(t, db, "r"); !slices.Equal(got, []string{"/d", "/e"}) {
		t.Fatalf("renamed: %q", got)
	}
	// A collection that does not exist lists nothing.
	if srcs, ans, err := db.Sources("c"); err != nil || ans != SourcesListed || len(srcs) != 0 {
		t.Fatalf("gone: %q %v %v", srcs, ans, err)
	}
}

// TestSourcesNotKept: a collection without the index (a store made before it was kept)
// cannot answer, its writes leave it alone, and BuildSources makes it from the records,
// kept from then on.
func TestSourcesNotKept(t *testing.T) {
	db := openTestDB(t)
	if _, err := db.Write("c", []Put{srcPut("1", "/a", nil), srcPut("2", "/b", nil)}, 2, 2); err != nil {
		t.Fatal(err)
	}
	// An older version's collection: no index, no key.
	if err := db.update(func(tx *bolt.Tx) error {
		b, _ := colBucket(tx, "c", false)
		if err := b.DeleteBucket(bkSources); err != nil {
			return err
		}
		return b.Bucket(bkInfo).Delete(keySources)
	}); err != nil {
		t.Fatal(err)
	}
	if _, ans, err := db.Sources("c"); ans != SourcesNotKept || err != nil {
		t.Fatalf("an index not kept answered: %v %v", ans, err)
	}
	if _, err := db.Write("c", []Put{srcPut("3", "/c", nil)}, 1, 1); err != nil {
		t.Fatal(err)
	}
	agrees(t, db, "c") // not kept: nothing to disagree
	if err := db.BuildSources("c"); err != nil {
		t.Fatal(err)
	}
	if got := mustSources(t, db, "c"); !slices.Equal(got, []string{"/a", "/b", "/c"}) {
		t.Fatalf("built: %q", got)
	}
	if _, err := db.Delete("c", []string{"1"}); err != nil {
		t.Fatal(err)
	}
	if got := mustSources(t, db, "c"); !slices.Equal(got, []string{"/b", "/c"}) {
		t.Fatalf("kept after the build: %q", got)
	}
	agrees(t, db, "c")
	if err := db.BuildSources("nope"); err == nil {
		t.Fatal("BuildSources of a missing collection")
	}
}

// TestSourcesDistrusted: an index that is damaged, lost an entry, disagrees with the counts
// or holds a source too long to key never answers; a write that finds it wrong stops keeping
// it; Tally names what differs; BuildSources mends it.
func TestSourcesDistrusted(t *testing.T) {
	long := strings.Repeat("y", maxIndexedSource+1)
	cases := []struct {
		name   string
		damage func(tx *bolt.Tx, b *bolt.Bucket) error
		write  []Put // a write after the damage (nil: none)
		kept   bool  // the index is still kept after it (its key present)
		tally  string
		ans    SourcesAnswer // what a listing says after it
	}{
		{"a count's byte flipped", func(_ *bolt.Tx, b *bolt.Bucket) error {
			k := sourceIndexKey("/a")
			v := append([]byte(nil), b.Bucket(bkSources).Get(k)...)
			v[7] ^= 1
			return b.Bucket(bkSources).Put(k, v)
		}, nil, true, "fails its checksum", SourcesNotKept},
		{"a key's byte flipped", func(_ *bolt.Tx, b *bolt.Bucket) error {
			sb := b.Bucket(bkSources)
			v := append([]byte(nil), sb.Get(sourceIndexKey("/a"))...)
			if err := sb.Delete(sourceIndexKey("/a")); err != nil {
				return err
			}
			return sb.Put(sourceIndexKey("/q"), v)
		}, nil, true, "fails its checksum", SourcesNotKept},
		{"an entry lost", func(_ *bolt.Tx, b *bolt.Bucket) error {
			return b.Bucket(bkSources).Delete(sourceIndexKey("/b"))
		}, nil, true, "no entry for", SourcesNotKept},
		{"a source not in the records, checksummed", func(_ *bolt.Tx, b *bolt.Bucket) error {
			k := sourceIndexKey("/ghost")
			return b.Bucket(bkSources).Put(k, sourceEntry(k, 1))
		}, nil, true, "counts 1 documents of", SourcesNotKept},
		{"its bucket lost", func(_ *bolt.Tx, b *bolt.Bucket) error {
			return b.DeleteBucket(bkSources)
		}, nil, true, "bucket is missing", SourcesNotKept},
		{"a damaged entry met by a write", func(_ *bolt.Tx, b *bolt.Bucket) error {
			k := sourceIndexKey("/a")
			return b.Bucket(bkSources).Put(k, []byte("short"))
		}, []Put{srcPut("9", "/a", nil)}, false, "", SourcesNotKept},
		{"a write that removes more than it counts", nil, []Put{srcPut("1", "/z", strp("/never"))}, false, "", SourcesNotKept},
		{"a source too long to key", nil, []Put{srcPut("8", long, nil)}, true, "", SourcesUnlisted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := openLogged(t, filepath.Join(t.TempDir(), "store.db"), false)
			if _, err := db.Write("c", []Put{srcPut("1", "/a", nil), srcPut("2", "/a", nil), srcPut("3", "/b", nil)}, 3, 3); err != nil {
				t.Fatal(err)
			}
			if tc.damage != nil {
				if err := db.update(func(tx *bolt.Tx) error {
					b, _ := colBucket(tx, "c", false)
					return tc.damage(tx, b)
				}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.write != nil {
				added := 0
				for _, p := range tc.write {
					if !p.Replaces {
						added++
					}
				}
				if _, err := db.Write("c", tc.write, added, added); err != nil {
					t.Fatal(err)
				}
			}
			if srcs, ans, err := db.Sources("c"); ans != tc.ans || err != nil {
				t.Fatalf("a listing answered %v %q (%v), want %v", ans, srcs, err, tc.ans)
			}
			var kept bool
			if err := db.view(func(tx *bolt.Tx) error {
				b, _ := colBucket(tx, "c", false)
				kept = b.Bucket(bkInfo).Get(keySources) != nil
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if kept != tc.kept {
				t.Fatalf("kept %v, want %v", kept, tc.kept)
			}
			tl, err := db.Tally("c", 0)
			if err != nil || !strings.Contains(tl.Sources, tc.tally) || (tc.tally == "") != (tl.Sources == "") {
				t.Fatalf("tally says %q (%v), want %q", tl.Sources, err, tc.tally)
			}
			if err := db.BuildSources("c"); err != nil {
				t.Fatal(err)
			}
			var want []string
			if err := db.view(func(tx *bolt.Tx) error {
				b, _ := colBucket(tx, "c", false)
				d, err := db.countSources(tx, b.Bucket(bkDocs))
				for src := range d {
					if src != "" {
						want = append(want, src)
					}
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)
			srcs, ans, err := db.Sources("c")
			if tc.ans == SourcesUnlisted {
				if ans != SourcesUnlisted || err != nil {
					t.Fatalf("a too long source listed from the index: %v %v", ans, err)
				}
				return
			}
			if ans != SourcesListed || err != nil || !slices.Equal(srcs, want) {
				t.Fatalf("after BuildSources: %q %v %v, want %q", srcs, ans, err, want)
			}
			agrees(t, db, "c")
		})
	}
}

// TestSourcesReadOnly: a read-only store reads the index and cannot build it.
func TestSourcesReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	db, _ := openLogged(t, path, false)
	if _, err := db.Write("c", []Put{srcPut("1", "/a", nil)}, 1, 1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro, _ := openLogged(t, path, true)
	if got := mustSources(t, ro, "c"); !slices.Equal(got, []string{"/a"}) {
		t.Fatalf("read-only: %q", got)
	}
	if err := ro.BuildSources("c"); err == nil {
		t.Fatal("a read-only store built the index")
	}
	if err := ro.DropSources("c"); err == nil {
		t.Fatal("a read-only store dropped the index")
	}
}
