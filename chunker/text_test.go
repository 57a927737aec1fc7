package chunker

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestTextMarkdown(t *testing.T) {
	src, err := os.ReadFile("testdata/guide.md")
	if err != nil {
		t.Fatal(err)
	}
	chunks := Text(string(src), TextOptions{Budget: 150})
	checkLossless(t, "guide.md", src, chunks)
	var paths [][]string
	for _, c := range chunks {
		if c.Kind != KindText || c.Language != "text" {
			t.Errorf("kind %q language %q", c.Kind, c.Language)
		}
		if c.Size > 150 {
			t.Errorf("chunk of %d characters", c.Size)
		}
		paths = append(paths, c.Headings)
	}
	want := [][]string{
		{"Deployment guide"},
		{"Deployment guide", "Prerequisites"},
		{"Deployment guide", "Building"},
		{"Deployment guide", "Building", "Signing"},
		{"Deployment guide", "Rolling out"},
		{"Deployment guide", "Rolling out"},
	}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("heading paths:\n%q\nwant\n%q", paths, want)
	}
	// The fenced block is not split at the "# headings inside fences" line.
	for _, c := range chunks {
		if strings.HasPrefix(strings.TrimSpace(c.Content), "# headings") {
			t.Errorf("a chunk starts inside the code fence")
		}
	}
	// The long last section is cut at a sentence boundary.
	last := chunks[len(chunks)-1]
	if !strings.HasPrefix(last.Content, "If errors rise") && !strings.HasPrefix(last.Content, "Watch") && !strings.HasPrefix(last.Content, "Then") {
		t.Errorf("last chunk starts mid-sentence: %q", last.Content)
	}
}

func TestTextLevels(t *testing.T) {
	sentence := "The quick brown fox jumps over the lazy dog. "
	para := strings.Repeat(sentence, 5) + "\n\n"
	tests := []struct {
		name   string
		text   string
		budget int
		min    int // minimum number of chunks
	}{
		{"fits", "One short paragraph.", 100, 1},
		{"paragraphs", strings.Repeat(para, 4), 200, 4},
		{"sentences", strings.Repeat(sentence, 20), 80, 10},
		{"long word", strings.Repeat("a", 500), 100, 5},
		{"heading only then text", "# A\n## B\ntext here\n", 100, 1},
		{"unicode", strings.Repeat("Ünïcödé wörds hérè. ", 50), 60, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := Text(tt.text, TextOptions{Budget: tt.budget})
			checkLossless(t, tt.name, []byte(tt.text), chunks)
			if len(chunks) < tt.min {
				t.Errorf("%d chunks, want at least %d", len(chunks), tt.min)
			}
			for _, c := range chunks {
				if c.Size > tt.budget {
					t.Errorf("chunk of %d characters over %d", c.Size, tt.budget)
				}
			}
		})
	}
	// Plain text: '#' lines are not headings.
	chunks := Text("# not a heading\ntext\n", TextOptions{Plain: true})
	if len(chunks) != 1 || chunks[0].Headings != nil {
		t.Errorf("plain: %+v", chunks)
	}
	chunks = Text("# A\n## B\ntext here\n", TextOptions{})
	if len(chunks) != 1 || !reflect.DeepEqual(chunks[0].Headings, []string{"A", "B"}) {
		t.Errorf("heading-only section: %+v", chunks)
	}
	if Text("", TextOptions{}) != nil {
		t.Error("empty text gave chunks")
	}
}

func TestTextOverlap(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 30; i++ {
		b.WriteString("Sentence number ")
		b.WriteString(strings.Repeat("x", i%7+1))
		b.WriteString(" ends here. ")
	}
	text := b.String()
	plain := Text(text, TextOptions{Budget: 100})
	over := Text(text, TextOptions{Budget: 100, Overlap: 40})
	if len(plain) != len(over) || len(plain) < 3 {
		t.Fatalf("%d chunks without overlap, %d with", len(plain), len(over))
	}
	for i := range over {
		if over[i].EndByte != plain[i].EndByte {
			t.Errorf("chunk %d ends at %d, want %d", i, over[i].EndByte, plain[i].EndByte)
		}
		if over[i].Content != text[over[i].StartByte:over[i].EndByte] {
			t.Errorf("chunk %d: content does not match offsets", i)
		}
		if i == 0 {
			continue
		}
		extra := int(prefixNWS([]byte(text[over[i].StartByte:plain[i].StartByte]))[plain[i].StartByte-over[i].StartByte])
		if over[i].StartByte >= plain[i].StartByte || extra > 40 {
			t.Errorf("chunk %d: overlap of %d characters (start %d, plain %d)", i, extra, over[i].StartByte, plain[i].StartByte)
		}
		if !strings.HasPrefix(over[i].Content, "Sentence") {
			t.Errorf("chunk %d: overlap starts mid-sentence: %q", i, over[i].Content[:20])
		}
	}
}
