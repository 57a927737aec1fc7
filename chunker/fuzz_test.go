package chunker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

var fuzzLangs = []string{"go", "python", "javascript", "typescript", "tsx", "java", "rust", "c", "cpp", "csharp", "ruby", "markdown", "text"}

func FuzzCode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*")
	for i, p := range files {
		src, err := os.ReadFile(p)
		if err == nil {
			f.Add(src, uint8(i), uint16(200))
		}
	}
	f.Add([]byte("func f() {\n\t/* unterminated"), uint8(0), uint16(5))
	f.Add([]byte("class A:\n  def f(self):\n    '''doc'''\n    pass\n"), uint8(1), uint16(10))
	f.Fuzz(func(t *testing.T, src []byte, lang uint8, budget uint16) {
		opts := CodeOptions{Language: fuzzLangs[int(lang)%len(fuzzLangs)], Budget: int(budget%2000) + 1}
		chunks, err := Code("fuzz", src, opts)
		if err != nil {
			if !errors.Is(err, ErrBinary) && !errors.Is(err, ErrInvalidUTF8) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if err := losslessErr(src, chunks); err != nil {
			t.Fatal(err)
		}
		for _, c := range chunks {
			if c.StartLine < 1 || c.EndLine < c.StartLine {
				t.Fatalf("bad lines %d-%d", c.StartLine, c.EndLine)
			}
			if !utf8.ValidString(c.Content) {
				t.Fatalf("chunk cut inside a character")
			}
			if c.Size > opts.Budget && c.Kind != KindLines && c.Part == 0 && c.Kind != KindText {
				// over budget only for a single line cut at character boundaries
				for i := c.StartByte; i < c.EndByte-1; i++ {
					if src[i] == '\n' {
						t.Fatalf("multi-line chunk of %d characters over budget %d", c.Size, opts.Budget)
					}
				}
			}
			_ = c.EmbeddingText()
		}
	})
}

func FuzzText(f *testing.F) {
	if src, err := os.ReadFile("testdata/guide.md"); err == nil {
		f.Add(string(src), uint16(100), uint16(0), false)
	}
	f.Add("Hello. World! How are you?\n\n# H\n```\ncode\n```\n", uint16(5), uint16(3), false)
	f.Add("a.b.c. d e f", uint16(1), uint16(1), true)
	f.Fuzz(func(t *testing.T, text string, budget, overlap uint16, plain bool) {
		if !utf8.ValidString(text) {
			return
		}
		opts := TextOptions{Budget: int(budget%2000) + 1, Overlap: int(overlap % 500), Plain: plain}
		chunks := Text(text, opts)
		if opts.Overlap == 0 {
			if err := losslessErr([]byte(text), chunks); err != nil {
				t.Fatal(err)
			}
		}
		end := 0
		for _, c := range chunks {
			if c.Content != text[c.StartByte:c.EndByte] {
				t.Fatal("content does not match offsets")
			}
			if !utf8.ValidString(c.Content) {
				t.Fatal("chunk cut inside a character")
			}
			if c.StartByte > end || c.EndByte <= end {
				t.Fatalf("chunk [%d,%d) leaves a gap or goes backwards after %d", c.StartByte, c.EndByte, end)
			}
			end = c.EndByte
		}
		if len(text) > 0 && end != len(text) {
			t.Fatalf("chunks end at %d of %d", end, len(text))
		}
	})
}
