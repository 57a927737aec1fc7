package wordpiece

import (
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzEncode checks the invariants of Encode, EncodePair and Pieces on arbitrary input:
// no panic, ids inside the vocabulary, lengths within MaxLength, and the pair layout
// [CLS] a[:na] [SEP] b[:nb] [SEP] with the LongestFirst split of TruncatePair.
func FuzzEncode(f *testing.F) {
	seeds := [][2]string{
		{"", ""},
		{"Hello, world!", "How are you?"},
		{"Café naïve résumé — Crème Brûlée", "東京は日本の首都です。서울"},
		{"tabs\tand\nnewlines\u00a0nbsp\u200bzero\u00adwidth\x00null\ufffd", "I love pizza 🍕🍕 😀👍🏽!!!"},
		{"[CLS] [SEP] [PAD][MASK][UNK]", "[SE[SEP]P]"},
		{"\xff\xfe invalid utf8 \xc3", "İstanbul ΣΑΣ ǅ"},
		{"supercalifragilisticexpialidocious antidisestablishmentarianism", "a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	dir := filepath.Join(modelsDir(f), "all-MiniLM-L6-v2")
	tok, err := LoadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	tok.SetMaxLength(24) // small, so that truncation is exercised
	maxLen := tok.MaxLength()
	vs := int64(tok.VocabSize())
	inVocab := func(t *testing.T, ids []int64) {
		for _, id := range ids {
			if id < 0 || id >= vs {
				t.Fatalf("id %d outside vocabulary [0,%d)", id, vs)
			}
		}
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if n := tok.normalizeText(a); !utf8.ValidString(n) {
			t.Fatalf("normalized text is not valid UTF-8: %q", n)
		}
		pa, pb := tok.Pieces(a), tok.Pieces(b)
		inVocab(t, pa)
		inVocab(t, pb)

		e := tok.Encode(a)
		n := len(e.IDs)
		if n > maxLen || n < 2 || len(e.TypeIDs) != n || len(e.Mask) != n || len(e.Tokens) != n {
			t.Fatalf("Encode lengths ids %d types %d mask %d tokens %d (max %d)", n, len(e.TypeIDs), len(e.Mask), len(e.Tokens), maxLen)
		}
		inVocab(t, e.IDs)
		if e.IDs[0] != tok.ClsID() || e.IDs[n-1] != tok.SepID() {
			t.Fatalf("Encode not framed by [CLS]/[SEP]: %v", e.IDs)
		}
		if want := pa[:min(len(pa), maxLen-2)]; !slices.Equal(e.IDs[1:n-1], want) {
			t.Fatalf("Encode body %v, want %v", e.IDs[1:n-1], want)
		}

		p := tok.EncodePair(a, b)
		n = len(p.IDs)
		if n > maxLen || len(p.TypeIDs) != n || len(p.Mask) != n || len(p.Tokens) != n {
			t.Fatalf("EncodePair lengths %d/%d/%d/%d (max %d)", n, len(p.TypeIDs), len(p.Mask), len(p.Tokens), maxLen)
		}
		inVocab(t, p.IDs)
		na, nb := TruncatePair(len(pa), len(pb), maxLen-3)
		if na > len(pa) || nb > len(pb) || na < 0 || nb < 0 || na+nb > maxLen-3 && na+nb != len(pa)+len(pb) {
			t.Fatalf("TruncatePair(%d,%d) = %d,%d", len(pa), len(pb), na, nb)
		}
		want := []int64{tok.ClsID()}
		want = append(want, pa[:na]...)
		want = append(want, tok.SepID())
		want = append(want, pb[:nb]...)
		want = append(want, tok.SepID())
		if !slices.Equal(p.IDs, want) {
			t.Fatalf("EncodePair ids %v, want %v", p.IDs, want)
		}
		for i, typ := range p.TypeIDs {
			wantTyp := int64(0)
			if i >= na+2 {
				wantTyp = 1
			}
			if typ != wantTyp || p.Mask[i] != 1 {
				t.Fatalf("position %d: type %d mask %d", i, typ, p.Mask[i])
			}
		}
		bt := tok.PadBatch([]Encoding{e, p})
		if bt.Rows != 2 || bt.Cols != max(len(e.IDs), len(p.IDs)) || len(bt.IDs) != 2*bt.Cols {
			t.Fatalf("PadBatch shape %dx%d", bt.Rows, bt.Cols)
		}
	})
}
