package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/memory/internal/atomicfile"
	"github.com/agentmem/memory/internal/environ"
)

// Options configures Pull. The zero value downloads from Hugging Face into CacheDir() with
// 5 retries starting at a 1 s backoff.
type Options struct {
	// BaseURL is the server root; "" = $HF_ENDPOINT, else https://huggingface.co.
	BaseURL string
	// URLTemplate builds file URLs from {base}, {repo}, {revision} and {path};
	// "" = the Hugging Face layout, {base}/{repo}/resolve/{revision}/{path}.
	URLTemplate string
	// CacheDir is where models are stored; "" = CacheDir().
	CacheDir string
	// Client performs requests; nil = a client without an overall timeout (large files)
	// whose requests are bounded by ctx.
	Client *http.Client
	// Retries is how many times a failed transfer is retried (network errors, HTTP 5xx,
	// 408, 429); 0 = 5, negative = never.
	Retries int
	// Backoff is the delay before the first retry, doubling (with jitter) up to 30 s;
	// 0 = 1 s.
	Backoff time.Duration
	// Progress, when set, is called as bytes arrive (and once per file already present).
	Progress func(Progress)
	// Logger receives warnings (unpinned files, retries); nil = slog.Default().
	Logger *slog.Logger
}

// Progress reports the transfer of one file.
type Progress struct {
	Model     string
	File      string // path in the model folder
	FileIndex int    // 0-based index of File among Files
	Files     int
	Done      int64 // bytes of File on disk so far
	Total     int64 // expected size of File; -1 when unknown
}

// Pull makes sure the model name is available locally and returns its folder. A complete
// folder in $MEMORY_MODELS is returned as is. Otherwise each file of the manifest is
// downloaded into the cache (files already there are re-hashed and kept when they match),
// verified against its pinned size and sha256, and moved into place; a partial download
// is kept as <file>.part and resumed with an HTTP Range request by the next attempt.
func Pull(ctx context.Context, name string, opts Options) (string, error) {
	m, err := Lookup(name)
	if err != nil {
		return "", err
	}
	return PullModel(ctx, m, opts)
}

// PullModel is Pull for a model described by the caller (a mirror's own manifest, or a
// model this package does not list). m.Name names the cache folder.
func PullModel(ctx context.Context, m Model, opts Options) (string, error) {
	if m.Name == "" || strings.ContainsAny(m.Name, `/\`) || m.Name == "." || m.Name == ".." || len(m.Files) == 0 {
		return "", fmt.Errorf("%w: invalid manifest entry %q", ErrUnknownModel, m.Name)
	}
	for _, f := range m.Files {
		if !fs.ValidPath(f.Path) || f.Path == "." {
			return "", fmt.Errorf("%w: %s: invalid file path %q", ErrUnknownModel, m.Name, f.Path)
		}
	}
	var err error
	if root := environ.Get(environ.Models); root != "" {
		if dir := filepath.Join(root, m.Name); complete(dir, m) == nil {
			return dir, nil
		}
	}
	p := newPuller(opts)
	cache := opts.CacheDir
	if cache == "" {
		if cache, err = CacheDir(); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(cache, m.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("models: %w", err)
	}
	// Digests recorded by an earlier pull pin the files the manifest does not.
	recorded := map[string]string{}
	if s, err := readStamp(dir); err == nil {
		for _, f := range s.Files {
			recorded[f.Path] = f.SHA256
		}
	}
	st := stamp{Model: m.Name, Repo: m.Repo}
	for i, f := range m.Files {
		pin := f.SHA256
		if len(pin) != 64 && recorded[f.Path] != "" && digestMatches(recorded[f.Path], pin) {
			pin = recorded[f.Path]
		}
		dst := filepath.Join(dir, filepath.FromSlash(f.Path))
		prog := func(done, total int64) {
			if opts.Progress != nil {
				opts.Progress(Progress{Model: m.Name, File: f.Path, FileIndex: i, Files: len(m.Files), Done: done, Total: total})
			}
		}
		sum, size, err := p.ensure(ctx, p.url(m, f), dst, f, pin, prog)
		if err != nil {
			return "", fmt.Errorf("%s: %w", m.Name, err)
		}
		if len(f.SHA256) != 64 && pin == f.SHA256 {
			p.log.Warn("models: file has no full official sha256 pin; recorded its digest for later checks",
				"model", m.Name, "file", f.Path, "sha256", sum)
		}
		st.Files = append(st.Files, stampFile{Path: f.Path, Size: size, SHA256: sum})
	}
	if err := writeJSONAtomic(filepath.Join(dir, stampName), st); err != nil {
		return "", err
	}
	return dir, nil
}

type puller struct {
	opts    Options
	client  *http.Client
	base    string
	tmpl    string
	retries int
	backoff time.Duration
	log     *slog.Logger
}

func newPuller(opts Options) *puller {
	p := &puller{opts: opts, client: opts.Client, base: opts.BaseURL, tmpl: opts.URLTemplate,
		retries: opts.Retries, backoff: opts.Backoff, log: opts.Logger}
	if p.client == nil {
		p.client = &http.Client{}
	}
	if p.base == "" {
		p.base = environ.Get(environ.HFEndpoint)
	}
	if p.base == "" {
		p.base = defaultBaseURL
	}
	p.base = strings.TrimRight(p.base, "/")
	if p.tmpl == "" {
		p.tmpl = defaultURLTemplate
	}
	switch {
	case p.retries == 0:
		p.retries = 5
	case p.retries < 0:
		p.retries = 0
	}
	if p.backoff <= 0 {
		p.backoff = time.Second
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	return p
}

func (p *puller) url(m Model, f File) string {
	repo, rev := m.Repo, m.Revision
	if f.Repo != "" {
		repo = f.Repo
	}
	if f.Revision != "" {
		rev = f.Revision
	}
	if rev == "" {
		rev = "main"
	}
	return strings.NewReplacer("{base}", p.base, "{repo}", repo, "{revision}", rev, "{path}", f.Path).Replace(p.tmpl)
}

// ensure leaves a verified copy of f at dst and returns its digest and size.
func (p *puller) ensure(ctx context.Context, url, dst string, f File, pin string, prog func(done, total int64)) (string, int64, error) {
	if sum, size, err := hashFile(dst); err == nil {
		if (f.Size == 0 || size == f.Size) && digestMatches(sum, pin) {
			prog(size, size)
			return sum, size, nil
		}
		p.log.Warn("models: cached file does not match its pin; downloading again", "file", dst)
		if err := os.Remove(dst); err != nil {
			return "", 0, fmt.Errorf("models: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", 0, fmt.Errorf("models: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", 0, fmt.Errorf("models: %w", err)
	}
	part := dst + ".part"
	delay := p.backoff
	served := "" // the sha256 the server names for the file, when it names one
	for attempt := 0; ; attempt++ {
		err := p.transfer(ctx, url, part, f, prog, &served)
		if err == nil {
			break
		}
		var re retryable
		if !errors.As(err, &re) || attempt >= p.retries {
			if errors.As(err, &re) {
				err = fmt.Errorf("%w: %s after %d attempts: %v", ErrDownload, url, attempt+1, re.err)
			}
			if errors.Is(err, ErrChecksum) {
				os.Remove(part)
			}
			return "", 0, err
		}
		wait := delay/2 + rand.N(delay/2+1)
		p.log.Warn("models: transfer failed; retrying", "url", url, "attempt", attempt+1, "in", wait, "err", re.err)
		select {
		case <-ctx.Done():
			return "", 0, ctx.Err()
		case <-time.After(wait):
		}
		delay = min(2*delay, 30*time.Second)
	}
	sum, size, err := hashFile(part)
	if err != nil {
		return "", 0, fmt.Errorf("models: %w", err)
	}
	if f.Size > 0 && size != f.Size {
		os.Remove(part)
		return "", 0, fmt.Errorf("%w: %s is %d bytes, want %d (removed)", ErrChecksum, url, size, f.Size)
	}
	if !digestMatches(sum, pin) {
		os.Remove(part)
		return "", 0, fmt.Errorf("%w: %s has sha256 %s, want %s (removed)", ErrChecksum, url, sum, pin)
	}
	if served != "" && sum != served {
		// No pin of our own, or a pin that agrees: the server's content address (Hugging
		// Face's LFS oid at a pinned revision) must still agree with the bytes.
		os.Remove(part)
		return "", 0, fmt.Errorf("%w: %s has sha256 %s, the server names %s (removed)", ErrChecksum, url, sum, served)
	}
	if err := atomicfile.Publish(part, dst, atomicfile.Options{}); err != nil {
		return "", 0, fmt.Errorf("models: %w", err)
	}
	return sum, size, nil
}

// retryable marks a transient failure.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }

// transfer makes one attempt at completing part, resuming from its current size.
// When the response names the file's sha256 (see [servedDigest]), it is stored in *served.
func (p *puller) transfer(ctx context.Context, url, part string, f File, prog func(done, total int64), served *string) error {
	out, have, complete, err := openPart(part, f)
	if err != nil {
		return err
	}
	defer out.Close()
	if complete {
		return nil // complete; verified by the caller
	}
	resp, err := p.get(ctx, url, have)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if d := servedDigest(resp.Header); d != "" {
		*served = d
	}
	have, whole, err := acceptResponse(resp, out, url, have, f)
	if err != nil || whole {
		return err
	}
	if _, err := out.Seek(have, io.SeekStart); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	total := int64(-1)
	if f.Size > 0 {
		total = f.Size
	} else if resp.ContentLength >= 0 {
		total = have + resp.ContentLength
	}
	prog(have, total)
	done, err := copyBody(ctx, resp.Body, out, url, have, total, prog)
	if err != nil {
		return err
	}
	if f.Size > 0 && done < f.Size {
		return retryable{fmt.Errorf("%s ended at byte %d of %d", url, done, f.Size)}
	}
	return out.Close()
}

// openPart opens (or creates) the partial file and returns how many bytes of
// it can be kept: a part longer than the pinned size starts again from zero,
// and one exactly the pinned size is reported complete.
func openPart(part string, f File) (out *os.File, have int64, complete bool, err error) {
	out, err = os.OpenFile(part, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, 0, false, fmt.Errorf("models: %w", err)
	}
	info, err := out.Stat()
	if err != nil {
		out.Close()
		return nil, 0, false, fmt.Errorf("models: %w", err)
	}
	have = info.Size()
	if f.Size > 0 && have > f.Size {
		if err := out.Truncate(0); err != nil {
			out.Close()
			return nil, 0, false, fmt.Errorf("models: %w", err)
		}
		have = 0
	}
	return out, have, f.Size > 0 && have == f.Size, nil
}

// get sends the GET for url, asking for the bytes from have on when part of
// the file is already on disk. A failed round trip is retryable unless ctx
// ended.
func (p *puller) get(ctx context.Context, url string, have int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDownload, err)
	}
	req.Header.Set("User-Agent", "memory-models/1")
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, retryable{err}
	}
	return resp, nil
}

// acceptResponse decides from the response's status and sizes whether its
// body continues out at byte have. It returns the offset the body starts at
// (0 when the server sends the whole file again), whole when there is
// nothing left to read, or the error (retryable when transient); out is
// truncated whenever what is on disk cannot be kept.
func acceptResponse(resp *http.Response, out *os.File, url string, have int64, f File) (int64, bool, error) {
	switch {
	case resp.StatusCode == http.StatusPartialContent:
		if start, ok := rangeStart(resp.Header.Get("Content-Range")); !ok || start != have {
			out.Truncate(0)
			return 0, false, retryable{fmt.Errorf("server resumed at %q, asked for byte %d", resp.Header.Get("Content-Range"), have)}
		}
	case resp.StatusCode == http.StatusOK:
		if err := out.Truncate(0); err != nil {
			return 0, false, fmt.Errorf("models: %w", err)
		}
		have = 0
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0:
		if f.Size == 0 {
			return have, true, nil // nothing left to send: the partial file is whole; the digest decides
		}
		out.Truncate(0)
		return 0, false, retryable{fmt.Errorf("server refused range from byte %d", have)}
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return 0, false, fmt.Errorf("%w: %s: %s", ErrNotFound, url, resp.Status)
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout:
		return 0, false, retryable{fmt.Errorf("%s: %s", url, resp.Status)}
	default:
		return 0, false, fmt.Errorf("%w: %s: %s", ErrDownload, url, resp.Status)
	}
	if f.Size > 0 {
		if announced := announcedSize(resp, have); announced >= 0 && announced != f.Size {
			out.Truncate(0)
			return 0, false, fmt.Errorf("%w: %s is %d bytes on the server, want %d", ErrChecksum, url, announced, f.Size)
		}
	}
	return have, false, nil
}

// copyBody appends body to out, reporting progress after every write, and
// returns the file's length when the body ends. A read that fails is
// retryable unless ctx ended.
func copyBody(ctx context.Context, body io.Reader, out io.Writer, url string, have, total int64, prog func(done, total int64)) (int64, error) {
	buf := make([]byte, 256<<10)
	done := have
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				return done, fmt.Errorf("models: %w", err)
			}
			done += int64(n)
			prog(done, total)
		}
		if rerr == io.EOF {
			return done, nil
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return done, ctx.Err()
			}
			return done, retryable{fmt.Errorf("reading %s at byte %d: %w", url, done, rerr)}
		}
	}
}

// announcedSize is the full size of the file the response describes (-1 when unknown).
func announcedSize(resp *http.Response, have int64) int64 {
	if resp.StatusCode == http.StatusPartialContent {
		cr := resp.Header.Get("Content-Range")
		if i := strings.LastIndexByte(cr, '/'); i >= 0 {
			if n, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil {
				return n
			}
		}
		return -1
	}
	if resp.ContentLength >= 0 {
		return have + resp.ContentLength
	}
	return -1
}

// rangeStart parses the first byte of a "bytes START-END/TOTAL" Content-Range.
func rangeStart(h string) (int64, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(h), "bytes ")
	if !ok {
		return 0, false
	}
	start, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(start, 10, 64)
	return n, err == nil
}

func hashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func writeJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	if err := atomicfile.WriteFile(path, append(data, '\n'), atomicfile.Options{}); err != nil {
		return fmt.Errorf("models: %w", err)
	}
	return nil
}

// servedDigest is the sha256 a response names for the whole file, or "". Hugging Face
// answers a file stored in LFS with X-Linked-Etag (or, on its CDN, ETag) set to the LFS
// object's sha256: the content address its git tree records at the revision asked for, so
// a file without a digest of our own is still checked against its pinned revision. An
// ETag that is not 64 hex digits (a git blob's sha1, a weak tag) names nothing.
func servedDigest(h http.Header) string {
	for _, k := range []string{"X-Linked-Etag", "Etag"} {
		v := strings.TrimPrefix(strings.TrimSpace(h.Get(k)), "W/")
		v = strings.ToLower(strings.Trim(v, `"`))
		if len(v) != 64 {
			continue
		}
		if _, err := hex.DecodeString(v); err == nil {
			return v
		}
	}
	return ""
}
