package chunker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// stdlibRoots returns the Go and Python standard library source trees.
func stdlibRoots(t testing.TB) []string {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("no Go standard library found: go env GOROOT: %v", err)
	}
	roots := []string{filepath.Join(strings.TrimSpace(string(goroot)), "src")}
	py := "/root/.pyenv/versions/3.11.7/lib/python3.11"
	if _, err := os.Stat(py); err != nil {
		out, err := exec.Command("python3", "-c", `import sysconfig;print(sysconfig.get_paths()["stdlib"])`).Output()
		if err != nil {
			t.Fatalf("no Python standard library found: %v", err)
		}
		py = strings.TrimSpace(string(out))
	}
	return append(roots, py)
}

// TestLosslessStdlib chunks every file of the Go and Python standard libraries and checks
// that the chunks give back each file byte for byte. Set MEMORY_LONG=1 to run it.
func TestLosslessStdlib(t *testing.T) {
	if os.Getenv("MEMORY_LONG") != "1" {
		t.Skip("set MEMORY_LONG=1 to chunk the Go and Python standard libraries (minutes)")
	}
	for _, root := range stdlibRoots(t) {
		checkLosslessTree(t, root)
	}
}

// regularFiles lists the regular files under root.
func regularFiles(t *testing.T, root string) []string {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// checkLosslessTree chunks every file under root with two workers, fails t for a file
// whose chunks do not tile it (or that panics or errors), and logs speed and counts.
func checkLosslessTree(t *testing.T, root string) {
	paths := regularFiles(t, root)
	st := losslessStats{byLang: map[string]*langStat{}}
	work := make(chan string)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				src, err := os.ReadFile(p)
				if err != nil {
					t.Error(err)
					continue
				}
				t0 := time.Now()
				chunks, panicked, err := codeNoPanic(p, src)
				st.record(t, p, src, chunks, panicked, err, time.Since(t0))
			}
		}()
	}
	for _, p := range paths {
		work <- p
	}
	close(work)
	wg.Wait()
	wall := time.Since(start)
	mb := float64(st.bytesN) / 1e6
	t.Logf("%s: %d files chunked (%.1f MB), %d skipped (binary or invalid UTF-8), %d failures; wall %.1fs (%.2f MB/s with 2 workers), chunking time %.1fs (%.2f MB/s per core)",
		root, st.files, mb, st.skipped, st.failures, wall.Seconds(), mb/wall.Seconds(), st.parseTime.Seconds(), mb/st.parseTime.Seconds())
	t.Logf("by language:%s", st.byLanguage())
}

// losslessStats counts what checkLosslessTree's workers saw.
type losslessStats struct {
	mu                       sync.Mutex
	files, skipped, failures int
	bytesN                   int64
	byLang                   map[string]*langStat
	parseTime                time.Duration
}

type langStat struct{ files, chunks, fallback int }

// record counts one file's outcome (chunking it took d) and fails t for a panic, an
// error other than binary or invalid UTF-8 content, or chunks that do not tile src.
func (st *losslessStats) record(t *testing.T, p string, src []byte, chunks []Chunk, panicked any, err error, d time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.parseTime += d
	switch {
	case panicked != nil:
		st.failures++
		t.Errorf("%s: panic: %v", p, panicked)
		return
	case errors.Is(err, ErrBinary) || errors.Is(err, ErrInvalidUTF8):
		st.skipped++
		return
	case err != nil:
		st.failures++
		t.Errorf("%s: %v", p, err)
		return
	}
	if e := losslessErr(src, chunks); e != nil {
		st.failures++
		t.Errorf("%s: %v", p, e)
	}
	st.files++
	st.bytesN += int64(len(src))
	lang := LanguageOf(p)
	if lang == "" {
		lang = "text"
	}
	s := st.byLang[lang]
	if s == nil {
		s = &langStat{}
		st.byLang[lang] = s
	}
	s.files++
	s.chunks += len(chunks)
	if len(chunks) > 0 && chunks[0].Kind == KindLines && lang != "text" {
		s.fallback++
	}
}

// byLanguage renders the per-language counts, languages sorted.
func (st *losslessStats) byLanguage() string {
	langs := make([]string, 0, len(st.byLang))
	for l := range st.byLang {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	var b strings.Builder
	for _, l := range langs {
		s := st.byLang[l]
		fmt.Fprintf(&b, " %s: %d files, %d chunks, %d line-fallback;", l, s.files, s.chunks, s.fallback)
	}
	return b.String()
}

func codeNoPanic(p string, src []byte) (chunks []Chunk, panicked any, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked = r
		}
	}()
	chunks, err = Code(p, src, CodeOptions{})
	return chunks, nil, err
}

// BenchmarkCode measures chunking speed (MB/s) over the Go files of a few standard
// library packages.
func BenchmarkCode(b *testing.B) {
	for _, lang := range []string{"go", "python"} {
		b.Run(lang, func(b *testing.B) {
			var files [][]byte
			var names []string
			var total int64
			roots := stdlibRoots(b)
			root := filepath.Join(roots[0], "net", "http")
			ext := ".go"
			if lang == "python" {
				root, ext = filepath.Join(roots[1], "email"), ".py"
			}
			filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasSuffix(p, ext) {
					src, _ := os.ReadFile(p)
					files = append(files, src)
					names = append(names, p)
					total += int64(len(src))
				}
				return nil
			})
			b.SetBytes(total)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j, src := range files {
					if _, err := Code(names[j], src, CodeOptions{}); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
