package bm25

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Bleve's scorch names its segment files after their ids, "%012x.zap", and when it opens an
// index it parses the name of every *.zap entry of the directory as a hexadecimal id (to
// number the next segment): one it cannot parse (a stray "zzz.zap", a 0-byte file left by
// a tool, a copy "000000000004 (1).zap", an id of more than 16 digits) makes the whole
// open fail, before anything is read. Such a file is not one Bleve wrote. A writable open
// removes those that no snapshot names; a read-only open, which must not change the
// directory, opens the index through a shadow directory of links to every other entry.

// strayZapFiles returns the *.zap entries of the index's segment directory that Bleve
// cannot number (see above) and that the newest snapshot does not name. A named one is left
// to Bleve, whose open then fails (the index is damaged: it is rebuilt).
func strayZapFiles(path string) []string {
	storeDir := filepath.Join(path, "store")
	ents, err := os.ReadDir(storeDir)
	if err != nil {
		return nil
	}
	var strays []string
	for _, e := range ents {
		name := e.Name()
		if filepath.Ext(name) != ".zap" { // Bleve's own test
			continue
		}
		if _, err := strconv.ParseUint(strings.TrimSuffix(name, ".zap"), 16, 64); err != nil {
			strays = append(strays, name)
		}
	}
	if len(strays) == 0 {
		return nil
	}
	named, err := snapshotSegments(path)
	if err != nil {
		return nil // Bleve's open reports what is wrong with root.bolt
	}
	return slices.DeleteFunc(strays, func(s string) bool { return slices.Contains(named, s) })
}

// removeStrays removes the stray segment files of a writable index's directory (see
// strayZapFiles), logging each; what cannot be removed is left for Bleve's open to report.
func removeStrays(path string, strays []string) {
	for _, name := range strays {
		file := filepath.Join(path, "store", name)
		if err := os.Remove(file); err != nil {
			slog.Warn("bm25: cannot remove a file that is not a segment of the index", "file", file, "err", err)
			continue
		}
		slog.Warn("bm25: removed a file that is not a segment of the index", "file", file)
	}
}

// shadowStore makes a temporary directory of symbolic links to every entry of the index's
// segment directory but the strays, for a read-only open to give Bleve as its path; the
// caller removes it once the index is closed. "" when it cannot be made (no symbolic links
// here): the open then goes on without it, and fails as Bleve fails.
func shadowStore(path string, strays []string) string {
	storeDir, err := filepath.Abs(filepath.Join(path, "store"))
	if err != nil {
		return ""
	}
	ents, err := os.ReadDir(storeDir)
	if err != nil {
		return ""
	}
	dir, err := os.MkdirTemp("", "memory-bm25-ro-")
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if slices.Contains(strays, e.Name()) {
			continue
		}
		if err := os.Symlink(filepath.Join(storeDir, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			_ = os.RemoveAll(dir)
			return ""
		}
	}
	slog.Warn("bm25: ignoring files that are not segments of the read-only index", "dir", storeDir, "files", strays)
	return dir
}
