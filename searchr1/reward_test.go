package searchr1

import "testing"

func TestNormalizeAnswer(t *testing.T) {
	cases := []struct{ in, want string }{
		{"The  Eiffel Tower!", "eiffel tower"},
		{"an apple, a pear", "apple pear"},
		{"Theater", "theater"},
		{"U.S.A.", "usa"},
		{"  Beijing\n", "beijing"},
		{"a", ""},
	}
	for _, c := range cases {
		if got := NormalizeAnswer(c.in); got != c.want {
			t.Errorf("NormalizeAnswer(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestMatches(t *testing.T) {
	cases := []struct {
		pred  string
		golds []string
		em    bool
		subem bool
	}{
		{"The Beatles", []string{"Beatles"}, true, true},
		{"the beatles band", []string{"Beatles", "Fab Four"}, false, true},
		{"Fab four.", []string{"Beatles", "Fab Four"}, true, true},
		{"Stones", []string{"Beatles"}, false, false},
		{"x", nil, false, false},
	}
	for _, c := range cases {
		if got := ExactMatch(c.pred, c.golds...); got != c.em {
			t.Errorf("ExactMatch(%q, %q) = %v", c.pred, c.golds, got)
		}
		if got := SubstringMatch(c.pred, c.golds...); got != c.subem {
			t.Errorf("SubstringMatch(%q, %q) = %v", c.pred, c.golds, got)
		}
	}
}

func TestExtractSolution(t *testing.T) {
	prompt := "For example, <answer> Beijing </answer>. Question: q\n"
	cases := []struct {
		text   string
		opts   ExtractOptions
		want   string
		wantOK bool
	}{
		{prompt + "<answer> Paris </answer>", SearchR1Extract(), "Paris", true},
		{prompt + "no answer", SearchR1Extract(), "", false},
		{"<answer>only</answer>", SearchR1Extract(), "", false},
		{"<answer>only</answer>", ExtractOptions{}, "only", true},
		{"<answer>a</answer> <answer>b\n</answer>", ExtractOptions{}, "b", true},
		{"<ans>x</ans>", ExtractOptions{Tag: "ans"}, "x", true},
	}
	for _, c := range cases {
		got, ok := ExtractSolution(c.text, c.opts)
		if got != c.want || ok != c.wantOK {
			t.Errorf("ExtractSolution(%q) = %q, %v; want %q, %v", c.text, got, ok, c.want, c.wantOK)
		}
	}
	if r := EMReward(prompt+"<answer>the Paris</answer>", []string{"Paris"}, SearchR1Extract(), 0, 1); r != 1 {
		t.Errorf("EMReward correct = %v", r)
	}
	if r := EMReward(prompt+"<answer>Lyon</answer>", []string{"Paris"}, SearchR1Extract(), 0.1, 1); r != 0.1 {
		t.Errorf("EMReward wrong = %v", r)
	}
	if r := EMReward(prompt, []string{"Paris"}, SearchR1Extract(), 0.1, 1); r != 0 {
		t.Errorf("EMReward none = %v", r)
	}
}

func TestValidSequenceAndFormatReward(t *testing.T) {
	good := "<think>a</think>\n<search>q</search>\n\n<information>Doc 1(Title: x) Paris is big</information>\n\n<think>b</think>\n<answer>Paris</answer>"
	direct := "<think>easy</think><answer>Paris</answer>"
	cases := []struct {
		name  string
		text  string
		valid bool
	}{
		{"search round", good, true},
		{"direct answer", direct, true},
		{"two rounds", "<think>a</think><search>q</search><information>i</information><search>q2</search><information>j</information><think>b</think><answer>x</answer>", true},
		{"no think first", "<search>q</search><information>i</information><think>b</think><answer>x</answer>", false},
		{"text outside", "<think>a</think> stray <answer>x</answer>", false},
		{"no answer", "<think>a</think><search>q</search><information>i</information>", false},
		{"unclosed", "<think>a<answer>x</answer>", false},
		{"after answer", direct + " trailing", false},
		{"search without information", "<think>a</think><search>q</search><answer>x</answer>", false},
	}
	for _, c := range cases {
		if ok, why := ValidSequence(c.text, FormatOptions{}); ok != c.valid {
			t.Errorf("%s: ValidSequence = %v (%s), want %v", c.name, ok, why, c.valid)
		}
	}
	if ok, _ := ValidSequence("<|im_start|>user\n<answer>ex</answer><|im_start|>assistant\n"+direct, FormatOptions{Start: "<|im_start|>assistant"}); !ok {
		t.Error("start marker not honoured")
	}
	s := SearchR1FormatScores()
	s.Retrieval = 0.05
	golds := []string{"Paris"}
	rewards := []struct {
		name string
		text string
		want float64
	}{
		{"valid and correct", good, 1},
		{"valid, wrong, retrieved", "<think>a</think><search>q</search><information>Paris</information><think>b</think><answer>Lyon</answer>", 0.25},
		{"valid, wrong, not retrieved", "<think>b</think><answer>Lyon</answer>", 0.2},
		{"invalid and correct", "<answer>Paris</answer> junk", 0.8},
		{"invalid and wrong", "junk <answer>Lyon</answer>", 0.1},
		{"nothing", "junk", 0},
	}
	for _, r := range rewards {
		if got := FormatReward(r.text, golds, FormatOptions{}, s); got < r.want-1e-9 || got > r.want+1e-9 {
			t.Errorf("%s: FormatReward = %v, want %v", r.name, got, r.want)
		}
	}
}
