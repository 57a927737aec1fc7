//go:build !linux

package bm25

import "unsafe"

func init() { populateOff.Store(true) }

// populate does nothing here: the arena's pages fault in at their first touch.
func populate(unsafe.Pointer, int) {}
