package onnx

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/environ"
)

// LibraryEnv is the environment variable naming the ONNX Runtime shared library.
const LibraryEnv = environ.ORTLib

// SystemLibrary is the library name handed to the dynamic loader when no file is found.
const SystemLibrary = "libonnxruntime.so.1"

// The ONNX Runtime build this module is tested with, as `memory runtime pull` installs it.
const (
	// RuntimeVersion is the ONNX Runtime version of the pinned build.
	RuntimeVersion = "1.30.0"
	// RuntimeURL is the npm tarball of onnxruntime-node that carries the pinned build.
	RuntimeURL = "https://registry.npmjs.org/onnxruntime-node/-/onnxruntime-node-" + RuntimeVersion + ".tgz"
	// RuntimeSHA256 is the sha256 of the linux/x64 libonnxruntime.so.1 inside RuntimeURL
	// (the same pin as scripts/deps.sh).
	RuntimeSHA256 = "ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23"
	// PullCommand is the CLI command that installs the pinned build into the user cache.
	PullCommand = "memory runtime pull"
	// CacheEnv overrides the cache root (the same variable the models cache honours).
	CacheEnv = environ.Cache
)

// runtimeMember is the library's path inside the npm tarball, per platform.
var runtimeMember = map[string]string{
	"linux/amd64": "package/bin/napi-v6/linux/x64/" + SystemLibrary,
}

// maxRuntimeBytes caps the library extracted from the tarball (the real one is ~25 MB).
const maxRuntimeBytes = 512 << 20

// Errors of PullRuntime.
var (
	// ErrRuntimeChecksum reports a downloaded library whose sha256 is not the pinned one.
	ErrRuntimeChecksum = errors.New("onnx: ONNX Runtime library checksum mismatch")
	// ErrRuntimeDownload reports a failed download or an archive without the library.
	ErrRuntimeDownload = errors.New("onnx: cannot download the ONNX Runtime library")
	// ErrRuntimePlatform reports a platform with no pinned build.
	ErrRuntimePlatform = errors.New("onnx: no pinned ONNX Runtime build for this platform")
)

// RuntimeDir is the folder `memory runtime pull` installs the library into:
// $MEMORY_CACHE/onnxruntime/<version>, else <user cache>/memory/onnxruntime/<version>.
func RuntimeDir() (string, error) {
	d, err := environ.CacheDir("onnxruntime", RuntimeVersion)
	if err != nil {
		return "", fmt.Errorf("onnx: %w", err)
	}
	return d, nil
}

// CachedLibrary is the library in RuntimeDir when it is there, else "".
func CachedLibrary() string {
	dir, err := RuntimeDir()
	if err != nil {
		return ""
	}
	p := filepath.Join(dir, SystemLibrary)
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p
	}
	return ""
}

// libraryHint is appended to library errors: how to get the library.
func libraryHint() string {
	dir, err := RuntimeDir()
	if err != nil {
		dir = "the user cache"
	}
	return fmt.Sprintf("set %s to the path of %s (ONNX Runtime %s), or run `%s` to download the pinned build into %s",
		LibraryEnv, SystemLibrary, RuntimeVersion, PullCommand, dir)
}

// PullOptions configures PullRuntime. The zero value downloads RuntimeURL into RuntimeDir.
type PullOptions struct {
	// URL is the npm tarball; "" = RuntimeURL.
	URL string
	// Dir is the install folder; "" = RuntimeDir().
	Dir string
	// Client performs the request; nil = a client with a 10 minute timeout.
	Client *http.Client
	// Force downloads even when a verified library is already installed.
	Force bool
	// Progress, when set, is called as compressed bytes arrive (total -1 when unknown).
	Progress func(done, total int64)
	// SHA256 overrides the pinned digest of the library; "" = RuntimeSHA256. Set it only
	// with Member, for a build of your own (another platform, a mirror's repackaging).
	SHA256 string
	// Member is the library's path inside the tarball; "" = the pinned platform's path.
	Member string
}

// PullRuntime downloads the pinned ONNX Runtime build (the npm package onnxruntime-node),
// extracts libonnxruntime.so.1, verifies its sha256 against RuntimeSHA256 and installs it
// atomically into the install folder, returning the library's path. A verified library
// already there is kept (unless Force). Nothing is left behind on failure.
func PullRuntime(ctx context.Context, opts PullOptions) (string, error) {
	plan, err := planPull(opts)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(plan.dir, SystemLibrary)
	if !opts.Force {
		if sum, err := fileSHA256(dst); err == nil && sum == plan.want {
			return dst, nil
		}
	}
	if err := os.MkdirAll(plan.dir, 0o755); err != nil {
		return "", fmt.Errorf("onnx: %w", err)
	}
	resp, err := fetchTarball(ctx, plan.client, plan.url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if opts.Progress != nil {
		body = &progressReader{r: resp.Body, total: resp.ContentLength, fn: opts.Progress}
	}
	if err := plan.install(body, dst); err != nil {
		return "", err
	}
	return dst, nil
}

// pullPlan is PullOptions with its defaults filled in.
type pullPlan struct {
	want   string // sha256 the library must have
	member string // the library's path inside the tarball
	dir    string // install folder
	url    string // tarball to download
	client *http.Client
}

// planPull fills in the defaults of opts; a platform with no pinned build and no Member
// of the caller's is ErrRuntimePlatform.
func planPull(opts PullOptions) (pullPlan, error) {
	p := pullPlan{want: opts.SHA256, member: opts.Member, dir: opts.Dir, url: opts.URL, client: opts.Client}
	if p.want == "" {
		p.want = RuntimeSHA256
	}
	if p.member == "" {
		platform := runtime.GOOS + "/" + runtime.GOARCH
		p.member = runtimeMember[platform]
		if p.member == "" {
			return pullPlan{}, fmt.Errorf("%w: %s (only linux/amd64 is pinned; install ONNX Runtime %s yourself and set %s)",
				ErrRuntimePlatform, platform, RuntimeVersion, LibraryEnv)
		}
	}
	if p.dir == "" {
		var err error
		if p.dir, err = RuntimeDir(); err != nil {
			return pullPlan{}, err
		}
	}
	if p.url == "" {
		p.url = RuntimeURL
	}
	if p.client == nil {
		p.client = &http.Client{Timeout: 10 * time.Minute}
	}
	return p, nil
}

// fetchTarball GETs url and returns the response when it is 200 OK (its body is the
// caller's to close); any other outcome is ErrRuntimeDownload.
func fetchTarball(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRuntimeDownload, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRuntimeDownload, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: GET %s: %s", ErrRuntimeDownload, url, resp.Status)
	}
	return resp, nil
}

// install extracts the plan's member from the tarball body into a temporary file next
// to dst, checks its sha256 and renames it to dst, executable and synced. On any failure
// the temporary file is removed and dst is left as it was.
func (p pullPlan) install(body io.Reader, dst string) error {
	err := atomicfile.Write(dst, atomicfile.Options{Perm: 0o755}, func(w io.Writer) error {
		sum, err := extractMember(body, p.member, w)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrRuntimeDownload, p.url, err)
		}
		if sum != p.want {
			return fmt.Errorf("%w: %s in %s has sha256 %s, want %s", ErrRuntimeChecksum, p.member, p.url, sum, p.want)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrRuntimeDownload) && !errors.Is(err, ErrRuntimeChecksum) {
		return fmt.Errorf("onnx: %w", err)
	}
	return err
}

// extractMember copies the regular file member of the gzipped tar r into w and returns its
// sha256.
func extractMember(r io.Reader, member string, w io.Writer) (string, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return "", fmt.Errorf("not a gzip archive: %v", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", fmt.Errorf("archive has no %s", member)
		}
		if err != nil {
			return "", fmt.Errorf("reading archive: %v", err)
		}
		if h.Name != member {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return "", fmt.Errorf("%s is not a regular file in the archive", member)
		}
		if h.Size > maxRuntimeBytes {
			return "", fmt.Errorf("%s is %d bytes, over the %d byte cap", member, h.Size, maxRuntimeBytes)
		}
		hash := sha256.New()
		n, err := io.Copy(io.MultiWriter(w, hash), io.LimitReader(tr, maxRuntimeBytes+1))
		if err != nil {
			return "", fmt.Errorf("extracting %s: %v", member, err)
		}
		if n != h.Size {
			return "", fmt.Errorf("%s: got %d bytes, header says %d", member, n, h.Size)
		}
		return hex.EncodeToString(hash.Sum(nil)), nil
	}
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

type progressReader struct {
	r     io.Reader
	done  int64
	total int64
	fn    func(done, total int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.done += int64(n)
		p.fn(p.done, p.total)
	}
	return n, err
}
