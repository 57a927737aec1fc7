package searchr1

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
)

// qaEMCase is one case of testdata/qa_em_cases.golden.json: what CPython's restatement of
// Search-R1's qa_em.py computes for a prediction and its golden answers.
type qaEMCase struct {
	Prediction     string   `json:"prediction"`
	Golds          []string `json:"golds"`
	NormPrediction string   `json:"norm_prediction"`
	NormGolds      []string `json:"norm_golds"`
	EM             int      `json:"em"`
	SubEM          int      `json:"subem"`
	F1             float64  `json:"f1"`
}

func loadQAEMCases(t *testing.T) []qaEMCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "qa_em_cases.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []qaEMCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Cases) < 100 {
		t.Fatalf("%d cases in the golden file, want at least 100", len(g.Cases))
	}
	return g.Cases
}

// TestNormalizeMatchesPython: NormalizeAnswer, ExactMatch, SubstringMatch and TokenF1 give
// what CPython gives (testdata/qa_em_cases.py) for every case: Unicode word boundaries,
// every Python whitespace character, Python's case mappings, punctuation, empty answers.
func TestNormalizeMatchesPython(t *testing.T) {
	bad := 0
	for _, c := range loadQAEMCases(t) {
		fail := func(what string, got, want any) {
			bad++
			if bad <= 20 {
				t.Errorf("%s(%+q, %+q) = %+q, Python: %+q", what, c.Prediction, c.Golds, got, want)
			}
		}
		if got := NormalizeAnswer(c.Prediction); got != c.NormPrediction {
			fail("NormalizeAnswer", got, c.NormPrediction)
		}
		for i, g := range c.Golds {
			if got := NormalizeAnswer(g); got != c.NormGolds[i] {
				fail("NormalizeAnswer(gold)", got, c.NormGolds[i])
			}
		}
		if got := ExactMatch(c.Prediction, c.Golds...); got != (c.EM == 1) {
			fail("ExactMatch", got, c.EM)
		}
		if got := SubstringMatch(c.Prediction, c.Golds...); got != (c.SubEM == 1) {
			fail("SubstringMatch", got, c.SubEM)
		}
		if got := TokenF1(c.Prediction, c.Golds...); got != c.F1 {
			fail("TokenF1", got, c.F1)
		}
	}
	if bad > 0 {
		t.Fatalf("%d disagreements with Python", bad)
	}
}

// TestIssue43Normalisation: the answer checks that differed from the original's
// (ASCII-only \b, Python's extra whitespace, Python's lower case).
func TestIssue43Normalisation(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"aé", "aé"},                // \b is Unicode-aware: a is inside the word aé
		{"éthe", "éthe"},            // likewise the after é
		{"the é", "é"},              // a real article
		{"New\x1cYork", "new york"}, // U+001C to U+001F are whitespace to str.split()
		{"a\x1fb", "b"},             // ...and so end the word a, which \b then sees
		{"İstanbul", "i\u0307stanbul"},
		{"ΟΔΟΣ", "οδος"},
		{"ΣΑΣ ΣΑΣ", "σας σας"},
		{"AΣ\u0301B", "aσ\u0301b"},
	} {
		if got := NormalizeAnswer(c.in); got != c.want {
			t.Errorf("NormalizeAnswer(%+q) = %+q, want %+q", c.in, got, c.want)
		}
	}
	if ExactMatch("aé", "é") {
		t.Error(`ExactMatch("aé", "é"): the original does not match them`)
	}
	if !ExactMatch("İ", "i\u0307") || ExactMatch("İ", "i") {
		t.Error(`ExactMatch("İ"): lower() gives "i̇"`)
	}
}

// rangeSet is a golden list of [lo, hi] code point ranges.
type rangeSet [][2]rune

func (s rangeSet) has(r rune) bool {
	lo, hi := 0, len(s)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case r < s[m][0]:
			hi = m
		case r > s[m][1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// goAssigned reports whether Go's Unicode tables give r a category.
func goAssigned(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

// TestPyTextMatchesPython compares, for every code point that both CPython's Unicode
// database (testdata/qa_em_unicode.golden.json) and Go's assign, what the normalisation
// depends on: re's \w (pyIsWord), str.isspace (isPySpace), str.lower (pyLower), and the
// two classes of the final-sigma rule (pyCased, pyCaseIgnorable) as CPython's lower()
// itself reveals them.
func TestPyTextMatchesPython(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "qa_em_unicode.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Unicode                                           string
		Assigned, Word, Space, SigmaCased, SigmaIgnorable rangeSet
		Lower                                             [][2]any
	}
	dec := map[string]any{
		"unicode": &g.Unicode, "assigned": &g.Assigned, "word": &g.Word, "space": &g.Space,
		"sigma_cased": &g.SigmaCased, "sigma_ignorable": &g.SigmaIgnorable, "lower": &g.Lower,
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for k, v := range dec {
		if err := json.Unmarshal(raw[k], v); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	lower := map[rune]string{}
	for _, l := range g.Lower {
		lower[rune(l[0].(float64))] = l[1].(string)
	}
	checked, bad := 0, 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF || !g.Assigned.has(r) || !goAssigned(r) {
			continue
		}
		checked++
		wantLower, ok := lower[r]
		if !ok {
			wantLower = string(r)
		}
		for _, c := range []struct {
			what      string
			got, want any
		}{
			{"word", pyIsWord(r), g.Word.has(r)},
			{"space", isPySpace(r), g.Space.has(r)},
			{"lower", pyLower(string(r)), wantLower},
			{"sigma cased", pyCased(r) && !pyCaseIgnorable(r), g.SigmaCased.has(r)},
			{"sigma ignorable", pyCaseIgnorable(r), g.SigmaIgnorable.has(r)},
		} {
			if c.got != c.want {
				bad++
				if bad <= 30 {
					t.Errorf("U+%04X %s: Go %v, Python (Unicode %s) %v", r, c.what, c.got, g.Unicode, c.want)
				}
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d disagreements over %d code points", bad, checked)
	}
	if checked < 100000 {
		t.Fatalf("only %d code points checked", checked)
	}
}

// TestQAEMGoldenCurrent reruns testdata/qa_em_cases.py when python3 is here and checks
// that the golden files are its current output (skipped when its Unicode database is not
// the one the files were made with).
func TestQAEMGoldenCurrent(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ver, err := exec.CommandContext(ctx, py, "-c", "import unicodedata; print(unicodedata.unidata_version)").Output()
	if err != nil {
		t.Skipf("python3 without unicodedata: %v", err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "qa_em_cases.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var head struct{ Unicode string }
	if err := json.Unmarshal(golden, &head); err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(ver)); v != head.Unicode {
		t.Skipf("python3's Unicode database is %s, the golden files' %s", v, head.Unicode)
	}
	dir := t.TempDir()
	out, err := exec.CommandContext(ctx, py, filepath.Join("testdata", "qa_em_cases.py"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("qa_em_cases.py: %v\n%s", err, out)
	}
	for _, name := range []string{"qa_em_cases.golden.json", "qa_em_unicode.golden.json"} {
		want, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/%s is not the current output of qa_em_cases.py: run python3 searchr1/testdata/qa_em_cases.py", name)
		}
	}
}
