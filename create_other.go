//go:build !unix

package memory

import (
	"errors"
	"os"
)

// tryLockFile cannot lock on this platform: a partial store.db is never reset here.
func tryLockFile(*os.File) (bool, error) { return false, errors.ErrUnsupported }

// linkUnsupported: on this platform any failed os.Link falls back to making store.db in
// place.
func linkUnsupported(error) bool { return true }
