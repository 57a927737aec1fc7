package beir

import "testing"

// TestReadDocsKeepsTitleQuotes: only the pair of quotes around a Search-R1 title is
// removed, never quotes that belong to the title.
func TestReadDocsKeepsTitleQuotes(t *testing.T) {
	cases := []struct{ in, title, text string }{
		{`{"id":"1","contents":"\"\"Weird Al\" Yankovic\"\nsinger"}`, `"Weird Al" Yankovic`, "singer"},
		{`{"id":"1","contents":"\"\"Heroes\"\"\nsong"}`, `"Heroes"`, "song"},
		{`{"id":"1","contents":"\"Paris\"\ncity\nmore"}`, "Paris", "city\nmore"},
		{`{"id":"1","contents":"Unquoted\nbody"}`, "Unquoted", "body"},
		{`{"id":"1","contents":"\"\nbody"}`, `"`, "body"},
		{`{"id":"1","contents":"one line"}`, "one line", ""},
	}
	for _, c := range cases {
		got, _, err := collect(t, c.in+"\n", 0)
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v %v", c.in, got, err)
		}
		if got[0].Title != c.title || got[0].Text != c.text {
			t.Errorf("%s: title %q text %q, want %q %q", c.in, got[0].Title, got[0].Text, c.title, c.text)
		}
	}
}
