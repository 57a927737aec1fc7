//go:build !linux

package bm25

import "unsafe"

// populate does nothing here: the arena's pages fault in at their first touch.
func populate(unsafe.Pointer, int) {}
