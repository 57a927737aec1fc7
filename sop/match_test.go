package sop

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/vectorstore"
)

func proc(name string, priority int, triggers ...string) Procedure {
	return Procedure{Name: name, Trigger: triggers, Priority: priority, Category: "c", Steps: []Step{{Action: "x"}}}
}

func TestStem(t *testing.T) {
	tests := map[string]string{
		"errors": "error", "error": "error", "bugs": "bug", "bug": "bug",
		"debugging": "debug", "debugged": "debug", "debug": "debug", "debugger": "debugger",
		"queries": "query", "query": "query", "fixes": "fix", "patches": "patch", "processes": "process",
		"status": "status", "analysis": "analysis", "class": "class",
		"merge": "merg", "merged": "merg", "merging": "merg", "merges": "merg",
		"release": "releas", "released": "releas", "releasing": "releas",
		"installing": "install", "installed": "install", "stopped": "stop", "tried": "try",
		"speed": "speed", "string": "string", "prs": "pr", "has": "has", "its": "it",
		"deployment": "deployment", "documentary": "documentary", "c++": "c++", "v2": "v2",
	}
	for in, want := range tests {
		if got := stem(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want [][]string // words per segment
	}{
		{"Fix the BUG, now!", [][]string{{"fix", "the", "bug", "now"}}},
		{"Déploiement échoué", [][]string{{"deploiement", "echoue"}}},
		{"don't use C++ or C#", [][]string{{"dont", "use", "c++", "or", "c#"}}},
		{"a+b parse_rows()", [][]string{{"a", "b", "parse", "rows"}}},
		{"NullPointerException in HTTPServer", [][]string{
			{"nullpointerexception", "in", "httpserver"}, {"null", "pointer", "exception"}, {"http", "server"}}},
		{"  ...  ", nil},
	}
	for _, tt := range tests {
		segs := tokenize(tt.in, true)
		var got [][]string
		for _, seg := range segs {
			var ws []string
			for _, tk := range seg {
				ws = append(ws, tk.word)
			}
			got = append(got, ws)
		}
		if !slices.EqualFunc(got, tt.want, slices.Equal) {
			t.Errorf("tokenize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMatchTable(t *testing.T) {
	single := func(triggers ...string) []Procedure { return []Procedure{proc("p", 8, triggers...)} }
	tests := []struct {
		name    string
		sops    []Procedure
		query   string
		want    []string // names, best first
		trig    []string // matched triggers of the first match
		score   float64  // score of the first match (0 = not checked)
		opts    MatchOptions
		n       int
		noMatch bool
	}{
		{name: "word", sops: single("bug"), query: "fix this bug please", want: []string{"p"}, trig: []string{"bug"}, score: 14},
		{name: "not inside a longer word", sops: single("bug"), query: "which debugger should I use", noMatch: true},
		{name: "ladybug", sops: single("bug"), query: "a ladybug on the window", noMatch: true},
		{name: "prefix trigger fires inside", sops: single("debug*"), query: "which debugger should I use", want: []string{"p"}, trig: []string{"debug*"}},
		{name: "plural query", sops: single("error"), query: "so many errors", want: []string{"p"}},
		{name: "plural trigger", sops: single("errors"), query: "an error", want: []string{"p"}},
		{name: "inflected verb", sops: single("deploy"), query: "it deployed yesterday and deploying again", want: []string{"p"}, score: 14},
		{name: "case and accents", sops: single("Déploiement"), query: "DEPLOIEMENT en prod", want: []string{"p"}},
		{name: "accented query", sops: single("cafe"), query: "un café", want: []string{"p"}},
		{name: "phrase", sops: single("merge conflict"), query: "Merge Conflicts in main", want: []string{"p"}, trig: []string{"merge conflict"}, score: 19},
		{name: "phrase words apart", sops: single("merge conflict"), query: "a conflict while merging", noMatch: true},
		{name: "phrase words between", sops: single("merge conflict"), query: "merge the conflict", noMatch: true},
		{name: "phrase across punctuation", sops: single("not working"), query: "it is not, working", want: []string{"p"}},
		{name: "camel case part", sops: single("exception"), query: "NullPointerException at line 3", want: []string{"p"}},
		{name: "phrase not across camel parts", sops: single("in null"), query: "NullPointerException in NullWidget", noMatch: true},
		{name: "symbols", sops: single("c++"), query: "segfault in my C++ code", want: []string{"p"}},
		{name: "symbols differ", sops: single("c++"), query: "a c program", noMatch: true},
		{name: "no trigger words", sops: single("!!!"), query: "!!!", noMatch: true},
		{name: "empty query", sops: single("bug"), query: "", noMatch: true},
		{name: "each trigger counted once", sops: single("bug", "bugs"), query: "bug bug bugs", want: []string{"p"}, trig: []string{"bug"}, score: 14},
		{name: "two triggers add up", sops: single("bug", "crash"), query: "bug makes it crash", want: []string{"p"}, trig: []string{"bug", "crash"}, score: 24},
		{
			name:  "more triggers rank first",
			sops:  []Procedure{proc("one", 9, "error"), proc("two", 1, "error", "traceback")},
			query: "error with a traceback", want: []string{"two", "one"},
		},
		{
			name:  "phrase beats word",
			sops:  []Procedure{proc("leak", 10, "leak"), proc("memory", 6, "memory leak")},
			query: "a memory leak in the worker", want: []string{"memory", "leak"},
		},
		{
			name:  "priority breaks a tie",
			sops:  []Procedure{proc("low", 2, "deploy"), proc("high", 7, "release")},
			query: "deploy the release", want: []string{"high", "low"},
		},
		{
			name:  "name breaks a full tie",
			sops:  []Procedure{proc("b", 5, "deploy"), proc("a", 5, "release"), proc("c", 5, "ship")},
			query: "ship: deploy the release", want: []string{"a", "b", "c"},
		},
		{
			name:  "rare trigger outweighs a common one",
			sops:  []Procedure{proc("x1", 5, "error"), proc("x2", 5, "error"), proc("x3", 5, "error"), proc("y", 5, "segfault")},
			query: "segfault error", want: []string{"y", "x1", "x2", "x3"},
		},
		{
			name:  "limit n",
			sops:  []Procedure{proc("b", 5, "deploy"), proc("a", 5, "release"), proc("c", 5, "ship")},
			query: "ship: deploy the release", n: 2, want: []string{"a", "b"},
		},
		{
			name:  "category filter",
			sops:  []Procedure{proc("a", 5, "deploy"), {Name: "b", Trigger: Triggers{"deploy"}, Category: "ops", Steps: []Step{{Action: "x"}}}},
			query: "deploy", opts: MatchOptions{Category: "ops"}, want: []string{"b"},
		},
		{
			name:  "min score",
			sops:  []Procedure{proc("a", 0, "deploy"), proc("b", 0, "deploy now")},
			query: "deploy now", opts: MatchOptions{MinScore: 12}, want: []string{"b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := NewLibrary(Options{})
			if err := lib.Add(tt.sops...); err != nil {
				t.Fatal(err)
			}
			ms := lib.Match(tt.query, tt.n, tt.opts)
			if tt.noMatch {
				if len(ms) != 0 {
					t.Fatalf("Match(%q) = %v, want nothing", tt.query, ms)
				}
				return
			}
			var got []string
			for _, m := range ms {
				got = append(got, m.SOP.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Match(%q) = %v, want %v", tt.query, got, tt.want)
			}
			if tt.trig != nil && !slices.Equal(ms[0].MatchedTriggers, tt.trig) {
				t.Errorf("matched triggers %q, want %q", ms[0].MatchedTriggers, tt.trig)
			}
			if tt.score != 0 && math.Abs(ms[0].Score-tt.score) > 1e-9 {
				t.Errorf("score %v, want %v", ms[0].Score, tt.score)
			}
			for i := 1; i < len(ms); i++ {
				if ms[i].Score > ms[i-1].Score {
					t.Errorf("matches not sorted by score: %v", ms)
				}
			}
		})
	}
}

func TestIDFWeight(t *testing.T) {
	// Two procedures share "error": each scores 10 x (0.5 + 0.5 x ln(1+2/2)/ln(1+2)).
	lib := NewLibrary(Options{})
	if err := lib.Add(proc("a", 0, "error"), proc("b", 0, "error")); err != nil {
		t.Fatal(err)
	}
	want := 10 * (0.5 + 0.5*math.Log(2)/math.Log(3))
	ms := lib.Match("error", 0, MatchOptions{})
	if len(ms) != 2 || math.Abs(ms[0].Score-want) > 1e-9 {
		t.Fatalf("Match = %+v, want two matches scoring %v", ms, want)
	}
}

func TestBaselineScore(t *testing.T) {
	s := proc("p", 8, "debug", "bug", "error", "not working")
	tests := []struct {
		query   string
		score   float64
		matched []string
	}{
		{"which debugger should I use", 24, []string{"debug", "bug"}},
		{"My code is NOT WORKING", 14, []string{"not working"}},
		{"so many errors", 14, []string{"error"}},
		{"hello", 4, nil},
	}
	for _, tt := range tests {
		score, m := baselineScore(s, tt.query)
		if score != tt.score || !slices.Equal(m, tt.matched) {
			t.Errorf("BaselineScore(%q) = %v %q, want %v %q", tt.query, score, m, tt.score, tt.matched)
		}
	}
	if ms := baselineMatch([]Procedure{s}, "hello", 0); len(ms) != 0 {
		t.Errorf("BaselineMatch without a trigger = %v", ms)
	}
}

// fakeEmbedder embeds a text as counts of a few keywords, enough to test the fallback.
type fakeEmbedder struct {
	words []string
	calls int
	fail  bool
}

func (f *fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if f.fail {
		return nil, errors.New("boom")
	}
	f.calls++
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(f.words))
		for j, w := range f.words {
			v[j] = float32(strings.Count(strings.ToLower(t), w))
		}
		out[i] = v
	}
	return out, nil
}

var _ vectorstore.Embedder = (*fakeEmbedder)(nil)

func (f *fakeEmbedder) Dim() int   { return len(f.words) }
func (f *fakeEmbedder) ID() string { return "fake" }

func TestSemanticFallback(t *testing.T) {
	emb := &fakeEmbedder{words: []string{"database", "deploy", "python"}}
	lib := NewLibrary(Options{Embedder: emb})
	db := proc("optimize_sql", 5, "slow query")
	db.Description = "Make a database query fast"
	dep := proc("deploy_app", 5, "ship it")
	dep.Description = "Deploy the app"
	if err := lib.Add(db, dep); err != nil {
		t.Fatal(err)
	}
	q := "my database is sluggish"
	if ms := lib.Match(q, 3, MatchOptions{}); len(ms) != 0 {
		t.Fatalf("without fallback: %v", ms)
	}
	ms, err := lib.MatchContext(context.Background(), q, 3, MatchOptions{SemanticFallback: true, MinSimilarity: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].SOP.Name != "optimize_sql" || !ms[0].Semantic || math.Abs(ms[0].Score-1) > 1e-6 {
		t.Fatalf("fallback = %+v", ms)
	}
	calls := emb.calls
	lib.Match(q, 3, MatchOptions{SemanticFallback: true, MinSimilarity: 0.5})
	if emb.calls != calls+1 {
		t.Errorf("procedures embedded again: %d calls after %d", emb.calls, calls)
	}
	// A trigger match never falls back.
	if ms := lib.Match("ship it now", 3, MatchOptions{SemanticFallback: true}); len(ms) != 1 || ms[0].Semantic {
		t.Errorf("trigger match with fallback option = %+v", ms)
	}
	if _, err := NewLibrary(Options{}).MatchContext(context.Background(), q, 1, MatchOptions{SemanticFallback: true}); !errors.Is(err, ErrNoEmbedder) {
		t.Errorf("no embedder: %v", err)
	}
	bad := NewLibrary(Options{Embedder: &fakeEmbedder{fail: true}})
	if err := bad.Add(db); err != nil {
		t.Fatal(err)
	}
	if ms, err := bad.MatchContext(context.Background(), q, 1, MatchOptions{SemanticFallback: true}); err == nil || len(ms) != 0 {
		t.Errorf("failing embedder: %v, %v", ms, err)
	}
}
