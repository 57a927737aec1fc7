//go:build !cgo

package chunker

// treeSitterAvailable reports whether this build parses with tree-sitter (cgo builds).
const treeSitterAvailable = false

// treeSpans is unavailable without cgo: every file uses the line-based fallback.
func treeSpans(l *language, src []byte, nws []int32, budget int, mergeDefs bool) []span {
	return nil
}
