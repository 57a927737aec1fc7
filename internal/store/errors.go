package store

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
)

// The store's errors. The root package's sentinels of the same names are these values, so
// errors.Is matches either.
var (
	// ErrCorrupt: the store of record, or a file read with it, is damaged.
	ErrCorrupt = errors.New("memory: store is corrupt")
	// ErrLocked: another process, or another Open in this one, holds the store's lock.
	ErrLocked = errors.New("memory: store is locked")
	// ErrCollectionNotFound: the collection is not stored.
	ErrCollectionNotFound = errors.New("memory: collection not found")
	// ErrTooManyCollections: creating a collection would pass the cap on collections.
	ErrTooManyCollections = errors.New("memory: too many collections")
	// ErrCollectionExists: a collection of the name a rename asks for is already stored.
	ErrCollectionExists = errors.New("memory: collection already exists")
)

// errNeedsRebuild: an index cannot be caught up from the change log.
var errNeedsRebuild = errors.New("the change log does not reach back to the index")

// Guard runs fn, turning a panic into an error wrapping ErrCorrupt (a damaged index file
// can make Bleve or zap panic, a damaged store.db page can make bbolt read out of bounds).
// what names the step in the error.
func Guard(what string, fn func() error) (err error) {
	// A damaged bbolt page can send a read past the mapped file: a fault, which Go turns
	// into a recoverable panic only on a goroutine that asked for it.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: %s", ErrCorrupt, what, Recovered(p))
		}
	}()
	return fn()
}

// Recovered describes a recovered panic for a user: what reading damaged data ran into, on
// one line, without the words of a Go crash ("panic:", "runtime error:"), which would
// read as a bug of the program rather than damage to a file.
func Recovered(p any) string {
	s := fmt.Sprint(p)
	if e, ok := p.(error); ok {
		s = e.Error()
	}
	s, _, _ = strings.Cut(s, "\n")
	for _, pre := range []string{"panic: ", "runtime error: ", "runtime error "} {
		s = strings.TrimPrefix(s, pre)
	}
	s = strings.ReplaceAll(s, "panic", "failure")
	return "reading damaged data failed (" + s + ")"
}

// firstLine is err's message up to its first line break (a recovered panic carries its
// stack after it).
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
