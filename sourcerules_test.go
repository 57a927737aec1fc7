package memory

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The source rules below hold the module to one mechanism each (issue #25).

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
		"models/pull.go":                    "a resumable download's .part file, published with atomicfile.Publish",
		"cmd/memory/evalqa.go":              "trajectories are streamed as the run goes, so an interrupted run keeps them",
		"bench/rollout/main.go":             "trajectories are streamed as the run goes",
		"bench/querybench/main.go":          "a CPU profile is streamed by runtime/pprof while the run goes",
		"bench/openstore/main.go":           "a CPU profile is streamed by runtime/pprof while the run goes",
		"bench/writes/main.go":              "a CPU profile is streamed by runtime/pprof while the run goes",
		"bench/flipfuzz/main.go":            "its findings log and sample corpus are written as the run goes (scratch files)",
		"bench/weaviate/scifact/main.go":    "its run files and the Weaviate node's log are scratch output written as the run goes",
	}
	checkSourceRule(t, regexp.MustCompile(`os\.(WriteFile|Create|CreateTemp|Rename)\(|os\.O_CREATE|ioutil\.WriteFile`), nil, allowed,
		"writes a file directly: use internal/atomicfile (or add the file, with its reason, to this test)")
}

// TestOneEnvironmentLookup holds the library to one place that reads the process
// environment (internal/environ, which names every variable it honours). The CLI, the
// benchmark and example programs and the test helpers read their own.
func TestOneEnvironmentLookup(t *testing.T) {
	checkSourceRule(t, regexp.MustCompile(`os\.(Getenv|LookupEnv|Environ)\(`),
		[]string{"cmd/", "bench/", "examples/", "scripts/", "internal/onnx/onnxtest/", "internal/testcluster/"},
		map[string]string{"internal/environ/environ.go": "the lookup itself"},
		"reads the environment: use internal/environ (name the variable there)")
}

// checkSourceRule fails t for each line of the module's non-test Go files (outside the
// folders skip, adapters and testdata) that matches rule, unless its file is in allowed
// (file: reason); an allowed file that no longer matches fails too, so the list stays true.
func checkSourceRule(t *testing.T, rule *regexp.Regexp, skip []string, allowed map[string]string, what string) {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		slash := filepath.ToSlash(path)
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "adapters") {
				return filepath.SkipDir
			}
			for _, p := range skip {
				if slash+"/" == p {
					return filepath.SkipDir
				}
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
			if !rule.MatchString(code) {
				continue
			}
			if _, ok := allowed[slash]; !ok {
				t.Errorf("%s:%d %s: %s", slash, i+1, what, strings.TrimSpace(line))
			}
			seen[slash] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for path := range allowed {
		if !seen[path] {
			t.Errorf("%s is in the list of exceptions but no longer matches: drop it from the list", path)
		}
	}
}
