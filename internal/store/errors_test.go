package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// TestGuardPassesErrors: Guard returns what fn returns when fn does not panic (nil stays
// nil, an error is the same value, not wrapped).
func TestGuardPassesErrors(t *testing.T) {
	if err := Guard("step", func() error { return nil }); err != nil {
		t.Fatalf("Guard of a healthy step: %v", err)
	}
	own := errors.New("own error")
	if err := Guard("step", func() error { return own }); err != own {
		t.Fatalf("Guard changed fn's error: %v", err)
	}
	wrapped := fmt.Errorf("outer: %w", ErrCollectionNotFound)
	if err := Guard("step", func() error { return wrapped }); err != wrapped || errors.Is(err, ErrCorrupt) {
		t.Fatalf("Guard of a wrapped sentinel: %v", err)
	}
}

// TestGuardRecoversPanics: a panic in fn (of any value, runtime errors included) is an
// error wrapping ErrCorrupt, naming the step, on one line, without the words of a Go crash.
func TestGuardRecoversPanics(t *testing.T) {
	var nilMap map[string]int
	var nilPtr *Record
	idx := 5
	for _, tc := range []struct {
		name string
		fn   func() error
		want string // a part of the message
	}{
		{"string", func() error { panic("page 7: invalid page type") }, "invalid page type"},
		{"error", func() error { panic(errors.New("assertion failed")) }, "assertion failed"},
		{"int", func() error { panic(42) }, "42"},
		{"nil map", func() error { nilMap["k"] = 1; return nil }, "assignment to entry in nil map"},
		{"index", func() error { s := []int{1}; _ = s[idx]; return nil }, "index out of range"},
		{"nil pointer", func() error { _ = nilPtr.Text; return nil }, "nil pointer dereference"},
		{"multi-line", func() error { panic("first line\ngoroutine 1 [running]:\nmain.main()") }, "first line"},
		{"the word panic", func() error { panic("a panic in a panic") }, "a failure in a failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Guard("the step", tc.fn)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err %v, want ErrCorrupt", err)
			}
			msg := err.Error()
			for _, bad := range []string{"panic:", "runtime error", "\n", "goroutine"} {
				if strings.Contains(msg, bad) {
					t.Errorf("message %q holds %q", msg, bad)
				}
			}
			if !strings.Contains(msg, "the step") || !strings.Contains(msg, tc.want) {
				t.Errorf("message %q lacks the step or %q", msg, tc.want)
			}
			if !strings.HasPrefix(msg, ErrCorrupt.Error()+": the step: reading damaged data failed (") {
				t.Errorf("message %q is not in Guard's form", msg)
			}
		})
	}
}

// TestGuardRestoresPanicOnFault: Guard turns faults into panics only while fn runs; the
// goroutine's setting is what it was before, after a panic too.
func TestGuardRestoresPanicOnFault(t *testing.T) {
	prev := debug.SetPanicOnFault(false)
	defer debug.SetPanicOnFault(prev)
	var inside bool
	Guard("x", func() error {
		inside = debug.SetPanicOnFault(true) // reads the setting (and keeps it true)
		return nil
	})
	if !inside {
		t.Fatal("faults do not panic inside Guard")
	}
	if debug.SetPanicOnFault(false) {
		t.Fatal("Guard left faults panicking after a healthy step")
	}
	Guard("x", func() error { panic("boom") })
	if debug.SetPanicOnFault(false) {
		t.Fatal("Guard left faults panicking after a panic")
	}
	debug.SetPanicOnFault(true)
	Guard("x", func() error { return nil })
	if !debug.SetPanicOnFault(false) {
		t.Fatal("Guard turned off a goroutine's own setting")
	}
}

func TestRecovered(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{"plain", "reading damaged data failed (plain)"},
		{"panic: x", "reading damaged data failed (x)"},
		{"runtime error: index out of range [3] with length 2", "reading damaged data failed (index out of range [3] with length 2)"},
		{"runtime error unaligned", "reading damaged data failed (unaligned)"},
		{errors.New("runtime error: boom\nstack"), "reading damaged data failed (boom)"},
		{"panicky panic", "reading damaged data failed (failureky failure)"},
		{7, "reading damaged data failed (7)"},
		{nil, "reading damaged data failed (<nil>)"},
		{"", "reading damaged data failed ()"},
	} {
		if got := Recovered(tc.in); got != tc.want {
			t.Errorf("Recovered(%#v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFirstLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"one", "one"},
		{"one\ntwo\nthree", "one"},
		{"\nafter", ""},
		{"", ""},
	} {
		if got := firstLine(errors.New(tc.in)); got != tc.want {
			t.Errorf("firstLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestSentinelsDistinct: no sentinel matches another (a caller tells them apart with
// errors.Is), and each keeps the root package's words.
func TestSentinelsDistinct(t *testing.T) {
	all := []error{ErrCorrupt, ErrLocked, ErrCollectionNotFound, ErrTooManyCollections, ErrCollectionExists, errNeedsRebuild, errDict, errNested, errStop}
	for i, a := range all {
		for j, b := range all {
			if (i == j) != errors.Is(a, b) {
				t.Errorf("errors.Is(%v, %v) = %v", a, b, errors.Is(a, b))
			}
		}
	}
	for _, e := range all[:5] {
		if !strings.HasPrefix(e.Error(), "memory: ") {
			t.Errorf("%q does not start with the package's prefix", e)
		}
	}
}

// TestSentinelsReachable: every exported sentinel comes out of the operation that
// produces it, errors.Is-able through the wrapping that names what failed.
func TestSentinelsReachable(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t)
	if err := db.CreateCollection("a", 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection("b", 0, nil); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a bbolt file ", 4096)), 0o644); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(dir, "locked.db")
	holder, err := Open(locked, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	for _, tc := range []struct {
		name string
		want error
		op   func() error
	}{
		{"Open of a file that is not a store", ErrCorrupt, func() error {
			db, err := Open(garbage, Options{Timeout: 50 * time.Millisecond})
			if err == nil {
				db.Close()
			}
			return err
		}},
		{"CheckFile of a file that is not a store", ErrCorrupt, func() error { return CheckFile(garbage) }},
		{"Open of a locked store", ErrLocked, func() error {
			db, err := Open(locked, Options{Timeout: 20 * time.Millisecond})
			if err == nil {
				db.Close()
			}
			return err
		}},
		{"Delete in a missing collection", ErrCollectionNotFound, func() error { _, err := db.Delete("nope", []string{"x"}); return err }},
		{"Replace in a missing collection", ErrCollectionNotFound, func() error { _, _, err := db.Replace("nope", nil, []string{"x"}, 0, 0); return err }},
		{"CollectionMeta of a missing collection", ErrCollectionNotFound, func() error { _, err := db.CollectionMeta("nope"); return err }},
		{"SetCollectionMeta of a missing collection", ErrCollectionNotFound, func() error { return db.SetCollectionMeta("nope", []byte(`{"a":1}`)) }},
		{"RenameCollection of a missing collection", ErrCollectionNotFound, func() error { return db.RenameCollection("nope", "z", nil) }},
		{"CreateCollection past the cap", ErrTooManyCollections, func() error { return db.CreateCollection("c", 2, nil) }},
		{"RenameCollection onto a stored name", ErrCollectionExists, func() error { return db.RenameCollection("a", "b", nil) }},
		{"DecodeRecord of damage", ErrCorrupt, func() error { _, err := DecodeRecord("id", []byte{recordMagic, 1, 2, 3, 4, '{', '}'}); return err }},
		{"DecodeVector of damage", ErrCorrupt, func() error { _, err := DecodeVector("id", []byte{1, 2, 3}); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			for _, other := range []error{ErrCorrupt, ErrLocked, ErrCollectionNotFound, ErrTooManyCollections, ErrCollectionExists} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("err %v also matches %v", err, other)
				}
			}
		})
	}
}

// TestNeedsRebuildReachable: an index with nothing (Seq 0) or one older than the trimmed
// change log needs a rebuild, which catchUpIndex says with errNeedsRebuild (not ErrCorrupt:
// nothing is damaged); one ahead of the store is ErrCorrupt.
func TestNeedsRebuildReachable(t *testing.T) {
	db := openTestDB(t)
	c := &Collection{Name: "c", LastSeq: 10, Trimmed: 5}
	k := Kind{Name: "fake"}
	for _, tc := range []struct {
		seq  uint64
		want error
	}{{0, errNeedsRebuild}, {4, errNeedsRebuild}, {11, ErrCorrupt}} {
		err := db.catchUpIndex(c, k, &fakeIndex{seq: tc.seq, ids: map[string]int{}})
		if !errors.Is(err, tc.want) {
			t.Errorf("index at %d: %v, want %v", tc.seq, err, tc.want)
		}
		if tc.want == errNeedsRebuild && errors.Is(err, ErrCorrupt) {
			t.Errorf("index at %d: a rebuild that is needed is reported as damage", tc.seq)
		}
	}
	// At the store's last change, or between the trim point and it: caught up, no error.
	for _, seq := range []uint64{5, 10} {
		if err := db.catchUpIndex(c, k, &fakeIndex{seq: seq, ids: map[string]int{}}); err != nil {
			t.Errorf("index at %d: %v", seq, err)
		}
	}
}
