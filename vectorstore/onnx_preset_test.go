//go:build cgo

package vectorstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/wordpiece"
)

// TestPresetE5TokenIDs: the tiny fixture encoder in a folder named like an e5 model gets
// E5's settings as the original Search-R1 does: "query: " and "passage: " in the token
// ids, queries cut to 256 tokens and passages to 180 (TestE5NameEmbedsWithPrefixes checks
// the vectors are those of exactly these token sequences).
func TestPresetE5TokenIDs(t *testing.T) {
	dir := tinyModelAs(t, "e5-base-v2")
	e := newEmbedderAt(t, dir, ONNXOptions{})
	tok, err := wordpiece.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	id := func(s string) int64 {
		v, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return v
	}
	long := strings.Repeat("otters hold hands while they sleep ", 100) // 600 word pieces
	cases := []struct {
		query  bool
		prefix []string
		cap    int
	}{{true, []string{"query", ":"}, 256}, {false, []string{"passage", ":"}, 180}}
	for _, c := range cases {
		for _, text := range []string{"otters", long} {
			ids := e.TokenIDs(text, c.query)
			if ids[0] != tok.ClsID() || ids[len(ids)-1] != tok.SepID() {
				t.Fatalf("query %v: ids %v lack [CLS]/[SEP]", c.query, ids[:3])
			}
			for i, p := range c.prefix {
				if ids[1+i] != id(p) {
					t.Fatalf("query %v: token %d is %q, want the prefix's %q", c.query, 1+i, tok.Token(ids[1+i]), p)
				}
			}
			if text == long && len(ids) != c.cap {
				t.Fatalf("query %v: %d tokens, want the cap %d", c.query, len(ids), c.cap)
			}
			if text == "otters" && len(ids) != 2+len(c.prefix)+len(tok.Pieces(text)) {
				t.Fatalf("query %v: %d tokens for one word", c.query, len(ids))
			}
		}
	}
	s := e.Settings()
	if s.Preset != PresetE5 || !s.ByName || s.Pooling != "mean" || !s.Normalize || e.PassageMaxLength() != 180 || e.QueryMaxLength() != 256 || e.MaxLength() != 256 {
		t.Fatalf("settings %+v", s)
	}
	if !strings.HasSuffix(e.ID(), `+preset=e5+passage="passage: "`) {
		t.Fatalf("ID %q does not record the preset and passage prefix", e.ID())
	}
}

// TestPresetsByName: the name picks the preset (bge: instruction, CLS pooling, no passage
// prefix; anything else: the folder's files), options override each setting, and the ID
// records what stored vectors depend on.
func TestPresetsByName(t *testing.T) {
	bgeInstr := "Represent this sentence for searching relevant passages: "
	str := func(s string) *string { return &s }
	cases := []struct {
		name, folder string
		opts         ONNXOptions
		preset       string
		q, p, pool   string
		qcap, pcap   int
		idSuffix     string
	}{
		{"e5 by name", "multilingual-E5-small", ONNXOptions{}, PresetE5, "query: ", "passage: ", "mean", 256, 180, `+preset=e5+passage="passage: "`},
		{"bge by name", "bge-small-en-v1.5", ONNXOptions{}, PresetBGE, bgeInstr, "", "cls", 256, 180, "+preset=bge"},
		{"plain by name", "all-MiniLM-L6-v2", ONNXOptions{}, PresetNone, "", "", "mean", 256, 256, ""},
		{"preset none on an e5 name", "e5-base-v2", ONNXOptions{Preset: PresetNone}, PresetNone, "", "", "mean", 256, 256, ""},
		{"preset asked for", "my-model", ONNXOptions{Preset: "e5"}, PresetE5, "query: ", "passage: ", "mean", 256, 180, `+preset=e5+passage="passage: "`},
		{"options override the preset", "e5-base-v2",
			ONNXOptions{QueryPrefix: str("q: "), PassagePrefix: str(""), Pooling: "cls", QueryMaxLength: 64, PassageMaxLength: 128},
			PresetE5, "q: ", "", "cls", 64, 128, "+preset=e5+plen=128"},
		{"MaxLength overrides the preset's caps", "e5-base-v2", ONNXOptions{MaxLength: 100}, PresetE5, "query: ", "passage: ", "mean", 100, 100, `+preset=e5+plen=100+passage="passage: "`},
		{"caps clamp to the position embeddings", "e5-x", ONNXOptions{QueryMaxLength: 4096}, PresetE5, "query: ", "passage: ", "mean", 512, 180, `+preset=e5+passage="passage: "`},
		{"no preset: MaxLength is not recorded", "tiny", ONNXOptions{MaxLength: 100}, PresetNone, "", "", "mean", 100, 100, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), c.folder)
			if err := os.Rename(tinyModelCopy(t, ""), dir); err != nil {
				t.Fatal(err)
			}
			s, err := ResolveONNXSettings(dir, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if s.Preset != c.preset || s.QueryPrefix != c.q || s.PassagePrefix != c.p || s.Pooling != c.pool ||
				s.QueryMaxLength != c.qcap || s.PassageMaxLength != c.pcap || s.IDSuffix != c.idSuffix || !s.Normalize {
				t.Fatalf("settings %+v", s)
			}
			id, ok := ParseONNXIdentity(c.folder + "@sha256:0123456789abcdef" + s.IDSuffix)
			if !ok || id.Model != c.folder || id.PassagePrefix != c.p || (id.Preset != "") != (c.preset != PresetNone) {
				t.Fatalf("ParseONNXIdentity: %+v %v", id, ok)
			}
		})
	}
	if _, err := ResolveONNXSettings(t.TempDir(), ONNXOptions{Preset: "e6"}); !errors.Is(err, errUnknownPreset) {
		t.Fatalf("preset e6: %v", err)
	}
}
