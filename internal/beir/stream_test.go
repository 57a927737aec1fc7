package beir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// collect reads in with ReadDocs and returns the documents and the batch sizes fn saw.
func collect(t *testing.T, in string, batch int) ([]Doc, []int, error) {
	t.Helper()
	var docs []Doc
	var sizes []int
	n, err := ReadDocs(context.Background(), strings.NewReader(in), "corpus.jsonl", batch, func(b []Doc) error {
		docs = append(docs, b...)
		sizes = append(sizes, len(b))
		return nil
	})
	if n != len(docs) {
		t.Errorf("ReadDocs returned %d, passed %d documents", n, len(docs))
	}
	return docs, sizes, err
}

func TestReadDocsShapes(t *testing.T) {
	long := strings.Repeat("w", 3<<20) // longer than the 1 MiB read buffer, under the cap
	tests := []struct {
		name string
		in   string
		want []Doc
	}{
		{"BEIR", `{"_id":"d1","title":"T","text":"one","metadata":{"a":1}}` + "\n",
			[]Doc{{ID: "d1", Title: "T", Text: "one"}}},
		{"BEIR, no title", `{"_id":"d1","text":"one"}`, []Doc{{ID: "d1", Text: "one"}}},
		{"Search-R1 contents", `{"id":"7","contents":"\"Title\"\nbody text"}` + "\n",
			[]Doc{{ID: "7", Title: "Title", Text: "body text"}}},
		{"integer id", `{"id":12,"text":"x"}`, []Doc{{ID: "12", Text: "x"}}},
		{"_id wins over id", `{"_id":"a","id":"b","text":"x"}`, []Doc{{ID: "a", Text: "x"}}},
		{"text wins over contents", `{"_id":"a","text":"x","contents":"T\ny"}`, []Doc{{ID: "a", Text: "x"}}},
		{"CRLF, blank and spaces-only lines skipped", "\r\n" + `{"_id":"a","text":"x"}` + "\r\n   \n\t\n" + `{"_id":"b","text":"y"}` + "\r\n",
			[]Doc{{ID: "a", Text: "x"}, {ID: "b", Text: "y"}}},
		{"no final newline", `{"_id":"a","text":"x"}` + "\n" + `{"_id":"b","text":"y"}`,
			[]Doc{{ID: "a", Text: "x"}, {ID: "b", Text: "y"}}},
		{"line longer than the read buffer", `{"_id":"a","text":"` + long + `"}` + "\n" + `{"_id":"b","text":"y"}`,
			[]Doc{{ID: "a", Text: long}, {ID: "b", Text: "y"}}},
		{"empty input", "", nil},
		{"only blank lines", "\n\n\r\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := collect(t, tc.in, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d docs, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("doc %d = %.80v, want %.80v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestReadDocsBadLines(t *testing.T) {
	defer func(n int) { maxLine = n }(maxLine)
	maxLine = 64
	ok := `{"_id":"a","text":"x"}` + "\n"
	tests := []struct {
		name     string
		in       string
		wantIs   error
		wantText string // besides "corpus.jsonl:LINE"
		line     int
		docs     int // documents passed to fn before the error (batch 1)
	}{
		{"not JSON", ok + "{oops\n", ErrFormat, "invalid character", 2, 1},
		{"no id", ok + "\n" + `{"text":"x"}` + "\n", ErrFormat, "missing _id", 3, 1},
		{"null id", `{"_id":null,"text":"x"}`, ErrFormat, "missing _id", 1, 0},
		{"fractional id", `{"id":1.5,"text":"x"}`, ErrFormat, "not an integer", 1, 0},
		{"object id", `{"id":{},"text":"x"}`, ErrFormat, "string or an integer", 1, 0},
		{"JSON array", "[1,2]\n", ErrFormat, "cannot unmarshal", 1, 0},
		{"text of the wrong type", `{"_id":"a","text":3}`, ErrFormat, "cannot unmarshal", 1, 0},
		{"line over the cap", ok + `{"_id":"b","text":"` + strings.Repeat("x", 80) + `"}` + "\n" + ok, ErrLineTooLong, "longer than 64 bytes", 2, 1},
		{"last line over the cap, no newline", ok + ok + strings.Repeat("x", 65), ErrLineTooLong, "longer than 64 bytes", 3, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, _, err := collect(t, tc.in, 1)
			if !errors.Is(err, tc.wantIs) {
				t.Fatalf("err = %v, want errors.Is %v", err, tc.wantIs)
			}
			if want := fmt.Sprintf("corpus.jsonl:%d", tc.line); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("err = %q, want it to name %q and %q", err, want, tc.wantText)
			}
			if len(docs) != tc.docs {
				t.Errorf("%d documents before the error, want %d", len(docs), tc.docs)
			}
		})
	}
	// At the cap exactly, with CRLF: accepted.
	line := `{"_id":"a","text":"` + strings.Repeat("x", 64-len(`{"_id":"a","text":""}`)) + `"}`
	if len(line) != 64 {
		t.Fatalf("test line is %d bytes", len(line))
	}
	if docs, _, err := collect(t, line+"\r\n"+line, 1); err != nil || len(docs) != 2 {
		t.Fatalf("lines at the cap: %d docs, %v", len(docs), err)
	}
}

func TestReadDocsBatches(t *testing.T) {
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, `{"_id":"d%d","text":"x"}`+"\n", i)
	}
	tests := []struct {
		batch int
		sizes []int
	}{
		{1, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{3, []int{3, 3, 3, 1}},
		{5, []int{5, 5}},
		{100, []int{10}},
		{0, []int{10}}, // DefaultBatch
	}
	for _, tc := range tests {
		docs, sizes, err := collect(t, b.String(), tc.batch)
		if err != nil || fmt.Sprint(sizes) != fmt.Sprint(tc.sizes) {
			t.Errorf("batch %d: sizes %v (%v), want %v", tc.batch, sizes, err, tc.sizes)
		}
		for i, d := range docs {
			if d.ID != fmt.Sprintf("d%d", i) {
				t.Fatalf("batch %d: doc %d is %q: out of order", tc.batch, i, d.ID)
			}
		}
	}
}

func TestReadDocsStops(t *testing.T) {
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, `{"_id":"d%d","text":"x"}`+"\n", i)
	}
	stop := errors.New("stop")
	calls := 0
	n, err := ReadDocs(context.Background(), strings.NewReader(b.String()), "c", 2, func([]Doc) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 2 || n != 2 {
		t.Errorf("fn's error: err %v, %d calls, n %d; want it as it is after 2 calls, n 2", err, calls, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	_, err = ReadDocs(ctx, strings.NewReader(b.String()), "c", 2, func([]Doc) error {
		calls++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("cancelled: err %v after %d calls, want context.Canceled after 1", err, calls)
	}
}

func TestEachDocAndLoadQueries(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "queries.jsonl"), `{"_id":"q1","text":"first"}`+"\n"+`{"_id":"q2","text":"unjudged"}`+"\n")
	writeFile(t, filepath.Join(dir, "qrels", "dev.tsv"), "q1\td1\t1\n")
	// No corpus at all: LoadQueries does not need one, EachDoc names the missing file.
	qs, qrels, err := LoadQueries(dir, "dev")
	if err != nil || len(qs) != 1 || qs[0].ID != "q1" || qrels["q1"]["d1"] != 1 {
		t.Fatalf("LoadQueries: %v %v %v", qs, qrels, err)
	}
	if _, err := EachDoc(context.Background(), dir, 1, func([]Doc) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("EachDoc without a corpus: %v", err)
	}
	writeFile(t, filepath.Join(dir, "corpus.jsonl"), `{"_id":"d1","text":"x"}`+"\n"+`{"_id":"d2","text":"y"}`+"\n"+`{"_id":"d3"`+"\n")
	var ids []string
	n, err := EachDoc(context.Background(), dir, 2, func(docs []Doc) error {
		for _, d := range docs {
			ids = append(ids, d.ID)
		}
		return nil
	})
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), filepath.Join(dir, "corpus.jsonl")+":3") || n != 2 || len(ids) != 2 {
		t.Fatalf("EachDoc: %d docs %v, err %v; want the 2 good ones then ErrFormat at corpus.jsonl:3", n, ids, err)
	}
	// A bad queries line is named by file and line too.
	writeFile(t, filepath.Join(dir, "queries.jsonl"), `{"_id":"q1","text":"first"}`+"\n"+`{"_id":`+"\n")
	if _, _, err := LoadQueries(dir, "dev"); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "queries.jsonl:2") {
		t.Fatalf("bad queries line: %v", err)
	}
}
