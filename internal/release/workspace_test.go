package release

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentmem/memory"
)

// goModJSON is what `go mod edit -json` and `go work edit -json` print, the parts read here.
type goModJSON struct {
	Require []struct {
		Path, Version string
	}
	Use []struct {
		DiskPath string
	}
	Replace []struct {
		Old, New struct {
			Path, Version string
		}
	}
}

// editJSON runs `go mod edit -json` (or `go work edit -json` for a go.work) on file.
func editJSON(t *testing.T, file string) goModJSON {
	t.Helper()
	sub := "mod"
	if filepath.Base(file) == "go.work" {
		sub = "work"
	}
	out := run(t, filepath.Dir(file), os.Environ(), goTool(t), sub, "edit", "-json", file)
	var f goModJSON
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("go %s edit -json %s: %v", sub, file, err)
	}
	return f
}

// TestWorkspace checks each adapter's module set-up in the working tree: its go.mod requires
// the core's release, v<memory.Version>, and replaces nothing (the modules that require it
// would ignore a replace); its go.work, which the Makefile's `cd adapters/NAME && go test`
// picks up, uses the adapter and the core in this checkout and maps exactly that release
// onto the checkout; and every module the adapter's packages and tests are built with in
// that workspace is required by its go.mod at the very version the workspace selects, so
// the adapter is developed and tested with the versions its users get (a workspace loads
// the core's whole module graph, which can select newer versions than the graph pruning of
// a module that requires the adapter; and the module cache that `make test` fills then
// holds what TestModuleProxy's consumers fetch).
func TestWorkspace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over each adapter's workspace: skipped under -short")
	}
	root := workRoot(t)
	release := "v" + memory.Version
	mods, err := filepath.Glob(filepath.Join(root, "adapters", "*", "go.mod"))
	if err != nil || len(mods) == 0 {
		t.Fatalf("no adapters/*/go.mod under %s (%v)", root, err)
	}
	goCmd := goTool(t)
	for _, gomod := range mods {
		dir := filepath.Dir(gomod)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			mod := editJSON(t, gomod)
			required := map[string]string{}
			for _, r := range mod.Require {
				required[r.Path] = r.Version
			}
			if v := required[coreModule]; v != release {
				t.Errorf("%s requires %s %q, want %s (memory.Version)", gomod, coreModule, v, release)
			}
			for _, r := range mod.Replace {
				t.Errorf("%s replaces %s: a module's replace is ignored by the modules that require it; the go.work beside it maps the core onto the checkout", gomod, strings.TrimSpace(r.Old.Path+" "+r.Old.Version))
			}

			work := filepath.Join(dir, "go.work")
			if _, err := os.Stat(work); err != nil {
				t.Fatalf("no go.work beside %s: %v", gomod, err)
			}
			w := editJSON(t, work)
			var uses []string
			for _, u := range w.Use {
				uses = append(uses, filepath.ToSlash(filepath.Clean(u.DiskPath)))
			}
			sort.Strings(uses)
			if strings.Join(uses, " ") != ". ../.." {
				t.Errorf("%s uses %q, want the adapter and the core: . and ../..", work, uses)
			}
			if len(w.Replace) != 1 || w.Replace[0].Old.Path != coreModule || w.Replace[0].Old.Version != release ||
				filepath.Clean(w.Replace[0].New.Path) != filepath.Join("..", "..") || w.Replace[0].New.Version != "" {
				t.Errorf("%s replaces %+v, want exactly %s %s => ../.. (the release the go.mod requires, until a proxy serves it)", work, w.Replace, coreModule, release)
			}

			env := withEnv(os.Environ(), "GOWORK=", "GOFLAGS=")
			if got := strings.TrimSpace(run(t, dir, env, goCmd, "env", "GOWORK")); got != work {
				t.Fatalf("go in %s uses workspace %q, want %s", dir, got, work)
			}
			out := run(t, dir, env, goCmd, "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", "./...")
			seen := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				p, v, _ := strings.Cut(line, " ")
				if v == "" || seen[line] { // a module of the workspace, or one already checked
					continue
				}
				seen[line] = true
				if required[p] != v {
					t.Errorf("the workspace builds %s with %s %s, its go.mod requires %q: a module that requires the adapter would build with another version; `go mod edit -require=%s@%s` in %s", filepath.Base(dir), p, v, required[p], p, v, dir)
				}
			}
			if len(seen) == 0 {
				t.Fatalf("go list found no module dependencies in %s:\n%s", dir, out)
			}
		})
	}
}
