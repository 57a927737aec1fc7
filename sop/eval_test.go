package sop

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// labelled is one query of testdata/eval/queries.jsonl: the procedures that are a right
// first answer, or none when the query must not match anything.
type labelled struct {
	Q      string   `json:"q"`
	Expect []string `json:"expect"`
}

func loadLabelled(t testing.TB) []labelled {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "eval", "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []labelled
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l labelled
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("queries.jsonl: %v", err)
		}
		out = append(out, l)
	}
	return out
}

// evalResult holds precision@1 over the queries that should match and the no-match
// accuracy over those that should not.
type evalResult struct {
	p1, noMatch       float64
	pos, neg          int
	hits, quiet       int
	falsePos, missing []string
}

func evaluate(qs []labelled, top func(q string) (string, bool)) evalResult {
	var r evalResult
	for _, l := range qs {
		name, ok := top(l.Q)
		if len(l.Expect) == 0 {
			r.neg++
			if !ok {
				r.quiet++
			} else {
				r.falsePos = append(r.falsePos, l.Q+" -> "+name)
			}
			continue
		}
		r.pos++
		if ok && slices.Contains(l.Expect, name) {
			r.hits++
		} else {
			r.missing = append(r.missing, l.Q+" -> "+name)
		}
	}
	r.p1 = float64(r.hits) / float64(r.pos)
	r.noMatch = float64(r.quiet) / float64(r.neg)
	return r
}

// TestLabelledQueries compares the trigger matcher with the naive baseline on the labelled
// queries: ours must be better on both precision@1 and no-match accuracy.
func TestLabelledQueries(t *testing.T) {
	lib, err := LoadDir(filepath.Join("testdata", "eval", "procedures"), Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	qs := loadLabelled(t)
	if len(qs) < 60 || lib.Len() < 12 {
		t.Fatalf("labelled set too small: %d queries over %d procedures", len(qs), lib.Len())
	}
	sops := lib.List("")
	base := evaluate(qs, func(q string) (string, bool) {
		ms := baselineMatch(sops, q, 1)
		if len(ms) == 0 {
			return "", false
		}
		return ms[0].SOP.Name, true
	})
	ours := evaluate(qs, func(q string) (string, bool) {
		ms := lib.Match(q, 1, MatchOptions{})
		if len(ms) == 0 {
			return "", false
		}
		return ms[0].SOP.Name, true
	})
	t.Logf("%d queries (%d should match, %d should not) over %d procedures", len(qs), ours.pos, ours.neg, lib.Len())
	t.Logf("baseline: precision@1 %.3f (%d/%d), no-match accuracy %.3f (%d/%d)", base.p1, base.hits, base.pos, base.noMatch, base.quiet, base.neg)
	t.Logf("ours:     precision@1 %.3f (%d/%d), no-match accuracy %.3f (%d/%d)", ours.p1, ours.hits, ours.pos, ours.noMatch, ours.quiet, ours.neg)
	if testing.Verbose() {
		for _, s := range base.missing {
			t.Logf("baseline wrong: %s", s)
		}
		for _, s := range base.falsePos {
			t.Logf("baseline false match: %s", s)
		}
		for _, s := range ours.missing {
			t.Logf("ours wrong: %s", s)
		}
		for _, s := range ours.falsePos {
			t.Logf("ours false match: %s", s)
		}
	}
	if ours.p1 <= base.p1 {
		t.Errorf("precision@1: ours %.3f is not above the baseline %.3f", ours.p1, base.p1)
	}
	if ours.noMatch <= base.noMatch {
		t.Errorf("no-match accuracy: ours %.3f is not above the baseline %.3f", ours.noMatch, base.noMatch)
	}
}

// BenchmarkLabelledQueries reports, for the baseline and for Match, the precision@1 and the
// no-match accuracy on the labelled queries (metrics "p@1" and "nomatch-acc"), and the time to
// answer the whole set.
func BenchmarkLabelledQueries(b *testing.B) {
	lib, err := LoadDir(filepath.Join("testdata", "eval", "procedures"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	qs := loadLabelled(b)
	sops := lib.List("")
	rules := []struct {
		name string
		top  func(q string) (string, bool)
	}{
		{"baseline", func(q string) (string, bool) {
			if ms := baselineMatch(sops, q, 1); len(ms) > 0 {
				return ms[0].SOP.Name, true
			}
			return "", false
		}},
		{"ours", func(q string) (string, bool) {
			if ms := lib.Match(q, 1, MatchOptions{}); len(ms) > 0 {
				return ms[0].SOP.Name, true
			}
			return "", false
		}},
	}
	for _, r := range rules {
		b.Run(r.name, func(b *testing.B) {
			var res evalResult
			for b.Loop() {
				res = evaluate(qs, r.top)
			}
			b.ReportMetric(res.p1, "p@1")
			b.ReportMetric(res.noMatch, "nomatch-acc")
		})
	}
}
