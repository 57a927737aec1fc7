package release

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentmem/memory"
)

// coreProgram is the fresh module's program for the core.
var coreProgram = program{
	want: memory.Version + " deploy 1",
	source: `package main

import (
	"context"
	"fmt"
	"log"

	"github.com/agentmem/memory"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	m, err := memory.Open("") // a temporary store, removed by Close
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Add(ctx, memory.Document{ID: "deploy", Text: "Deploy with make release."}); err != nil {
		return err
	}
	res, err := m.Search(ctx, "how do I release", memory.TopK(3))
	if err != nil {
		return err
	}
	if len(res) == 0 {
		return fmt.Errorf("no result")
	}
	fmt.Println(memory.Version, res[0].ID, len(res))
	return nil
}
`,
}

// program is the source of a main package and the line it must print.
type program struct {
	source string
	want   string
}

// adapterPrograms use each adapter through its framework's types: they store a document
// and find it (or count it) again.
var adapterPrograms = map[string]program{
	"langchaingo": {want: "1 1", source: `package main

import (
	"context"
	"fmt"
	"log"

	"github.com/agentmem/memory"
	memorylc "github.com/agentmem/memory/adapters/langchaingo"
	"github.com/agentmem/memory/vectorstore"
	"github.com/tmc/langchaingo/schema"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	m, err := memory.Open("", memory.WithEmbedder(vectorstore.NewHashEmbedder(64)))
	if err != nil {
		return err
	}
	defer m.Close()
	s := memorylc.New(m)
	ids, err := s.AddDocuments(ctx, []schema.Document{{PageContent: "Deploy with make release."}})
	if err != nil {
		return err
	}
	docs, err := s.SimilaritySearch(ctx, "release", 1)
	if err != nil {
		return err
	}
	fmt.Println(len(ids), len(docs))
	return nil
}
`},
	"eino": {want: "1 1", source: `package main

import (
	"context"
	"fmt"
	"log"

	"github.com/agentmem/memory"
	memoryeino "github.com/agentmem/memory/adapters/eino"
	"github.com/agentmem/memory/vectorstore"
	"github.com/cloudwego/eino/schema"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	m, err := memory.Open("", memory.WithEmbedder(vectorstore.NewHashEmbedder(64)))
	if err != nil {
		return err
	}
	defer m.Close()
	ix, err := memoryeino.NewIndexer(m, nil)
	if err != nil {
		return err
	}
	ids, err := ix.Store(ctx, []*schema.Document{{ID: "deploy", Content: "Deploy with make release."}})
	if err != nil {
		return err
	}
	r, err := memoryeino.NewRetriever(m, &memoryeino.RetrieverConfig{TopK: 1})
	if err != nil {
		return err
	}
	docs, err := r.Retrieve(ctx, "release")
	if err != nil {
		return err
	}
	fmt.Println(len(ids), len(docs))
	return nil
}
`},
	"genkit": {want: "1 1", source: `package main

import (
	"context"
	"fmt"
	"log"

	"github.com/agentmem/memory"
	memorygk "github.com/agentmem/memory/adapters/genkit"
	"github.com/firebase/genkit/go/ai"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	m, err := memory.Open("")
	if err != nil {
		return err
	}
	defer m.Close()
	ids, err := memorygk.Index(ctx, m, "", []*ai.Document{ai.DocumentFromText("Deploy with make release.", nil)})
	if err != nil {
		return err
	}
	n, err := m.Count(ctx)
	if err != nil {
		return err
	}
	fmt.Println(len(ids), n)
	return nil
}
`},
}

// adapterFolders returns the folders adapters/NAME of commit that hold a go.mod.
func adapterFolders(t *testing.T, repo, commit string) []string {
	t.Helper()
	out, err := git(repo, "ls-tree", "-r", "--name-only", commit, "--", "adapters")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, p := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if dir, base := path.Split(p); base == "go.mod" && strings.Count(dir, "/") == 2 {
			dirs = append(dirs, strings.TrimSuffix(dir, "/"))
		}
	}
	if len(dirs) == 0 {
		t.Fatalf("commit %s has no adapters/NAME/go.mod", commit)
	}
	return dirs
}

// TestModuleProxy is what a user of the release gets: the core module, the CLI and each
// adapter module, at version v<memory.Version>, fetched by a fresh module from a file-based
// module proxy and built, with no network. The proxy serves this repository's modules from
// their tags (v0.1.0, adapters/NAME/v0.1.0) when the clone has them, else from HEAD's
// committed tree under that version (the test logs which), and every other module from the
// local module cache's download folder, which `make test`'s earlier steps fill. The fresh
// module has its own module cache, so everything it builds was resolved through the proxy.
func TestModuleProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches and builds the core, the CLI and every adapter through a file-based module proxy (minutes): skipped under -short")
	}
	goCmd := goTool(t)
	repo := repoRoot(t)
	version := "v" + memory.Version
	head, err := git(repo, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	mods := []gitModule{{path: coreModule, version: version}}
	for _, dir := range adapterFolders(t, repo, strings.TrimSpace(string(head))) {
		mods = append(mods, gitModule{path: coreModule + "/" + dir, subdir: dir, version: version})
	}

	proxy := t.TempDir()
	for _, m := range mods {
		commit, fromTag, err := releaseCommit(repo, m)
		if err != nil {
			t.Fatal(err)
		}
		if fromTag {
			t.Logf("%s@%s: from tag %s (commit %.12s)", m.path, m.version, m.tag(), commit)
		} else {
			t.Logf("%s@%s: no tag %s in this clone; serving HEAD's committed tree (commit %.12s) as %s", m.path, m.version, m.tag(), commit, m.version)
		}
		if err := publish(proxy, repo, commit, m); err != nil {
			t.Fatalf("publishing %s: %v", m.path, err)
		}
	}

	download := filepath.Join(goEnvValue(t, "GOMODCACHE"), "cache", "download")
	if _, err := os.Stat(download); err != nil {
		t.Fatalf("module cache download folder: %v (run `make test`'s earlier steps, or go mod download, first)", err)
	}
	modcache := t.TempDir()
	t.Cleanup(func() {
		// The module cache is read-only: let the go command remove it before t.TempDir's
		// cleanup runs.
		env := withEnv(os.Environ(), "GOMODCACHE="+modcache)
		run(t, modcache, env, goCmd, "clean", "-modcache")
	})
	gobin := t.TempDir()
	env := withEnv(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(download),
		"GOSUMDB=off", "GONOSUMDB=", "GOPRIVATE=", "GONOPROXY=", "GOINSECURE=",
		"GOFLAGS=-mod=mod -trimpath", // -trimpath: builds share the build cache wherever the module cache is
		"GOWORK=off", "GOTOOLCHAIN=local",
		"GOMODCACHE="+modcache, "GOBIN="+gobin,
	)

	// consumer makes a fresh module, gets path@version into it and builds and runs prog.
	consumer := func(t *testing.T, get string, prog program) {
		dir := t.TempDir()
		run(t, dir, env, goCmd, "mod", "init", "example.com/consumer")
		run(t, dir, env, goCmd, "get", get+"@"+version)
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog.source), 0o644); err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(dir, "consumer")
		run(t, dir, env, goCmd, "build", "-o", bin, ".")
		if got := strings.TrimSpace(run(t, dir, env, bin)); got != prog.want {
			t.Errorf("the program printed %q, want %q", got, prog.want)
		}
		got := strings.TrimSpace(run(t, dir, env, goCmd, "list", "-m", "-f", "{{.Version}} {{.Dir}}", coreModule))
		v, d, _ := strings.Cut(got, " ")
		if v != version || !strings.HasPrefix(d, modcache) {
			t.Errorf("the consumer resolved %s to %q in %q, want %s in the fresh module cache %s", coreModule, v, d, version, modcache)
		}
	}

	t.Run("core", func(t *testing.T) { consumer(t, coreModule, coreProgram) })

	t.Run("cli", func(t *testing.T) {
		dir := t.TempDir()
		run(t, dir, env, goCmd, "install", coreModule+"/cmd/memory@"+version)
		bin := filepath.Join(gobin, "memory")
		out := run(t, dir, env, bin, "version")
		if !regexp.MustCompile(`(?m)^memory\s+` + regexp.QuoteMeta(memory.Version) + `\s*$`).MatchString(out) {
			t.Errorf("memory version printed\n%s\nwant a line \"memory  %s\"", out, memory.Version)
		}
	})

	for _, m := range mods[1:] {
		name := path.Base(m.subdir)
		prog, ok := adapterPrograms[name]
		if !ok {
			// An adapter without a program here: building a blank import of it is the check.
			prog = program{want: "ok", source: "package main\n\nimport (\n\t\"fmt\"\n\n\t_ \"" + m.path + "\"\n)\n\nfunc main() { fmt.Println(\"ok\") }\n"}
		}
		t.Run(m.subdir, func(t *testing.T) { consumer(t, m.path, prog) })
	}
}
