package memory

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOneAtomicWritePath holds the module to one way of replacing a file: every file it
// replaces whole goes through internal/atomicfile (a synced temporary file renamed over the
// target, the folder synced). The files below write in another way on purpose, each for
// the reason given; a new direct write elsewhere fails this test.
func TestOneAtomicWritePath(t *testing.T) {
	allowed := map[string]string{
		"internal/atomicfile/atomicfile.go": "the path itself",
		"backup.go":                         "a restore fills a fresh folder, fsynced, then renames the folder into place",
		"create.go":                         "a new store.db is made in a temporary file and hard-linked, never replacing one",
		"colmeta.go":                        "renaming a collection renames its derived index folders (rebuilt when lost)",
		"vectorstore/disk_file.go":          "segment files are appended to and synced; disk.json (atomicfile) commits them",
		"hybrid/bm25_sidecar.go":            "an append-only log whose records carry checksums",
		"models/pull.go":                    "a resumable download's .part file, published with atomicfile.Publish",
		"cmd/memory/evalqa.go":              "trajectories are streamed as the run goes, so an interrupted run keeps them",
		"bench/rollout/main.go":             "trajectories are streamed as the run goes",
		"bench/querybench/main.go":          "a CPU profile is streamed by runtime/pprof while the run goes",
	}
	direct := regexp.MustCompile(`os\.(WriteFile|Create|CreateTemp|Rename)\(|os\.O_CREATE|ioutil\.WriteFile`)
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "adapters") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			code, _, _ := strings.Cut(line, "//")
			if !direct.MatchString(code) {
				continue
			}
			path = filepath.ToSlash(path)
			if _, ok := allowed[path]; !ok {
				t.Errorf("%s:%d writes a file directly: use internal/atomicfile (or add the file, with its reason, to this test): %s", path, i+1, strings.TrimSpace(line))
			}
			seen[path] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for path := range allowed {
		if !seen[path] {
			t.Errorf("%s is allowed to write directly but no longer does: drop it from the list", path)
		}
	}
}
