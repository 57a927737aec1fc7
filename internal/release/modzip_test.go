package release

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// gitModule is a module of this repository as one of its commits holds it.
type gitModule struct {
	path    string // module path: github.com/agentmem/memory/adapters/eino
	subdir  string // its folder in the repository ("" for the root)
	version string // the version it is served as: v0.1.0
}

// tag is the git tag that releases m: the version for the root module, the folder and the
// version for a module in a folder (adapters/eino/v0.1.0), as the go command expects.
func (m gitModule) tag() string {
	if m.subdir == "" {
		return m.version
	}
	return m.subdir + "/" + m.version
}

// git runs git in repo and returns its standard output. Line endings are left as committed,
// as the go command asks of git when it makes a module zip.
func git(repo string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-c", "core.autocrlf=input", "-c", "core.eol=lf"}, args...)...)
	cmd.Dir = repo
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

// releaseCommit returns the commit to serve m from: its tag's when the repository has the
// tag (fromTag), else HEAD's.
func releaseCommit(repo string, m gitModule) (commit string, fromTag bool, err error) {
	if out, err := git(repo, "rev-parse", "--verify", "--quiet", "refs/tags/"+m.tag()+"^{commit}"); err == nil {
		return strings.TrimSpace(string(out)), true, nil
	}
	out, err := git(repo, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(string(out)), false, nil
}

// zipFile is one file of a module zip, its name relative to the module's root.
type zipFile struct {
	name string
	data []byte
}

// committedFiles returns the regular files of folder subdir ("" for all) of commit, named
// relative to subdir, as `git archive` exports them (symbolic links and folders are left
// out: a module zip holds neither). A module in a folder without a LICENSE gets the
// repository's root LICENSE, as the go command's git fetcher adds it.
func committedFiles(repo, commit, subdir string) ([]zipFile, error) {
	args := []string{"archive", "--format=zip", commit}
	if subdir != "" {
		args = append(args, subdir)
	}
	out, err := git(repo, args...)
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(bytes.NewReader(out), int64(len(out)))
	if err != nil {
		return nil, fmt.Errorf("reading git archive of %s: %w", commit, err)
	}
	prefix := ""
	if subdir != "" {
		prefix = subdir + "/"
	}
	var files []zipFile
	license := false
	for _, zf := range zr.File {
		if !zf.Mode().IsRegular() {
			continue
		}
		name, ok := strings.CutPrefix(zf.Name, prefix)
		if !ok || name == "" {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		_, err = b.ReadFrom(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("reading %s from git archive: %w", zf.Name, err)
		}
		files = append(files, zipFile{name: name, data: b.Bytes()})
		license = license || name == "LICENSE"
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("commit %s has no files under %q", commit, subdir)
	}
	if subdir != "" && !license {
		if b, err := git(repo, "cat-file", "blob", commit+":LICENSE"); err == nil {
			files = append(files, zipFile{name: "LICENSE", data: b})
		}
	}
	return files, nil
}

// moduleContent keeps the files that belong in the module's zip, by the module zip rules
// for a go.mod of Go 1.24 or later: not those of a nested module (any folder below the root
// holding a go.mod, with everything under it), not vendored packages (files in a folder
// below a "vendor" folder) nor vendor/modules.txt, and not the .hg_archival.txt of hg
// archive. It returns them sorted by name.
func moduleContent(files []zipFile) []zipFile {
	nested := map[string]bool{} // folders holding a go.mod, other than the root
	for _, f := range files {
		if dir, base := path.Split(f.name); dir != "" && strings.EqualFold(base, "go.mod") {
			nested[strings.TrimSuffix(dir, "/")] = true
		}
	}
	inNested := func(name string) bool {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if nested[d] {
				return true
			}
		}
		return false
	}
	var kept []zipFile
	for _, f := range files {
		if inNested(f.name) || vendored(f.name) || f.name == ".hg_archival.txt" {
			continue
		}
		kept = append(kept, f)
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].name < kept[j].name })
	return kept
}

// vendored reports whether name is vendor/modules.txt or inside a package vendored under a
// "vendor" folder (vendor/x/y.go is; vendor/y.go, a package named vendor, is not).
func vendored(name string) bool {
	if name == "vendor/modules.txt" {
		return true
	}
	var rest string
	if r, ok := strings.CutPrefix(name, "vendor/"); ok {
		rest = r
	} else if i := strings.Index(name, "/vendor/"); i >= 0 {
		rest = name[i+len("/vendor/"):]
	} else {
		return false
	}
	return strings.Contains(rest, "/")
}

// escapeModulePath writes a module path as the module proxy protocol does: each upper-case
// letter becomes "!" and its lower-case form.
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// publish writes module m, as commit holds it, into the file-based module proxy at dir: the
// GOPROXY protocol's <module>/@v/list, <version>.info, <version>.mod and <version>.zip.
func publish(dir, repo, commit string, m gitModule) error {
	files, err := committedFiles(repo, commit, m.subdir)
	if err != nil {
		return err
	}
	files = moduleContent(files)
	var gomod []byte
	for _, f := range files {
		if f.name == "go.mod" {
			gomod = f.data
		}
	}
	if gomod == nil {
		return fmt.Errorf("%s at %s has no go.mod", m.path, commit)
	}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for _, f := range files {
		w, err := zw.Create(m.path + "@" + m.version + "/" + f.name)
		if err != nil {
			return err
		}
		if _, err := w.Write(f.data); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	out, err := git(repo, "show", "-s", "--format=%cI", commit)
	if err != nil {
		return err
	}
	when, err := time.Parse(time.RFC3339, strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("commit time of %s: %w", commit, err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.version, when.UTC()})
	if err != nil {
		return err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(escapeModulePath(m.path)), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":              []byte(m.version + "\n"),
		m.version + ".info": info,
		m.version + ".mod":  gomod,
		m.version + ".zip":  zbuf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
