package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// coreModule is the module path of the repository's root module.
const coreModule = "github.com/agentmem/memory"

// commandTimeout bounds one go command: a cold build of the core (cgo, tree-sitter grammars)
// on a busy two-core machine takes minutes, so this is generous.
const commandTimeout = 20 * time.Minute

// goTool returns the go command: the one `go test` put first on PATH.
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	return p
}

// repoRoot returns the top folder of the git checkout holding this package; it skips the
// test when there is none (a source archive), since the checks read the committed tree.
func repoRoot(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("no git command: %v", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	out, err := git(wd, "rev-parse", "--show-toplevel")
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	root := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("git top folder %s has no go.mod: %v", root, err)
	}
	return root
}

// workRoot returns the module root of the working tree (two folders above this package),
// which may hold changes not yet committed.
func workRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "module "+coreModule+"\n") {
		t.Fatalf("%s/go.mod is not module %s", root, coreModule)
	}
	return root
}

// goEnvValue returns `go env KEY` as the tests' environment sets it.
func goEnvValue(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command(goTool(t), "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}

// withEnv returns env with each KEY=VALUE of set replacing any earlier KEY.
func withEnv(env []string, set ...string) []string {
	keys := map[string]bool{}
	for _, kv := range set {
		k, _, _ := strings.Cut(kv, "=")
		keys[k] = true
	}
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !keys[k] {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

// run runs name with args in dir with env, failing the test with its output when it fails;
// it returns the standard output.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s (in %s): %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// runErr runs name with args in dir with env and returns its combined output and error.
func runErr(dir string, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}
