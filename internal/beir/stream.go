package beir

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// MaxLineBytes is the longest line (without its line ending) the readers accept.
const MaxLineBytes = 64 << 20

// maxLine is MaxLineBytes; tests lower it.
var maxLine = MaxLineBytes

// ErrLineTooLong reports a line over MaxLineBytes; the error names the file and line.
var ErrLineTooLong = errors.New("beir: line too long")

// DefaultBatch is the batch size EachDoc uses for a batch <= 0.
const DefaultBatch = 512

// CorpusPath is the corpus file of the BEIR folder dir.
func CorpusPath(dir string) string { return filepath.Join(dir, "corpus.jsonl") }

// EachDoc streams dir/corpus.jsonl: fn gets the documents in file order, batch at a time
// (the last batch may be shorter), so memory stays bounded by one batch whatever the size
// of the corpus. It returns the number of documents passed to fn. A malformed line stops
// the read with ErrFormat (or ErrLineTooLong) naming the file and line; fn's error and
// ctx's cancellation stop it too, returned as they are.
func EachDoc(ctx context.Context, dir string, batch int, fn func(docs []Doc) error) (int, error) {
	path := CorpusPath(dir)
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return ReadDocs(ctx, f, path, batch, fn)
}

// ReadDocs is EachDoc over r; name is the file name errors give.
//
// A line is one JSON object: BEIR's {"_id","title","text"} or Search-R1's {"id","contents"}
// (contents' first line is the title, quotes trimmed, the rest the text); an id may be a
// string or an integer, and "_id" wins over "id". Blank lines are skipped; a line without
// an id is malformed. Each batch is a new slice: fn may keep it.
func ReadDocs(ctx context.Context, r io.Reader, name string, batch int, fn func(docs []Doc) error) (int, error) {
	if batch <= 0 {
		batch = DefaultBatch
	}
	total := 0
	docs := make([]Doc, 0, batch)
	flush := func() error {
		if len(docs) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(docs); err != nil {
			return err
		}
		total += len(docs)
		docs = make([]Doc, 0, batch)
		return nil
	}
	err := eachLine(r, name, func(n int, line []byte) error {
		d, err := parseDoc(line)
		if err != nil {
			return lineErr(ErrFormat, name, n, err)
		}
		docs = append(docs, d)
		if len(docs) == batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return total, err
}

// docLine is the union of the corpus line shapes ReadDocs accepts.
type docLine struct {
	BeirID   FlexID `json:"_id"`
	ID       FlexID `json:"id"`
	Title    string `json:"title"`
	Text     string `json:"text"`
	Contents string `json:"contents"`
}

func parseDoc(line []byte) (Doc, error) {
	var j docLine
	if err := json.Unmarshal(line, &j); err != nil {
		return Doc{}, err
	}
	d := Doc{ID: string(j.BeirID), Title: j.Title, Text: j.Text}
	if d.ID == "" {
		d.ID = string(j.ID)
	}
	if d.ID == "" {
		return Doc{}, errors.New("missing _id")
	}
	if d.Text == "" && j.Contents != "" {
		d.Title, d.Text = SplitContents(j.Contents)
	}
	return d, nil
}

// FlexID is an id given as a JSON string or an integer (kept as its decimal text), as
// corpora write them.
type FlexID string

// UnmarshalJSON accepts a string, an integer, or null.
func (f *FlexID) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = FlexID(s)
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return errors.New("id must be a string or an integer")
	}
	if _, err := n.Int64(); err != nil {
		return fmt.Errorf("id %s is not an integer", n)
	}
	*f = FlexID(n.String())
	return nil
}

// lineError is an error of line n of name: ErrFormat (or ErrLineTooLong) with the cause.
type lineError struct {
	sentinel error
	name     string
	line     int
	cause    error
}

func (e *lineError) Error() string {
	if e.cause == nil {
		return fmt.Sprintf("%v: %s:%d", e.sentinel, e.name, e.line)
	}
	return fmt.Sprintf("%v: %s:%d: %v", e.sentinel, e.name, e.line, e.cause)
}

// Unwrap gives the sentinel and the cause, so errors.Is matches either.
func (e *lineError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.cause}
}

// lineErr is sentinel at line n of name, with its cause.
func lineErr(sentinel error, name string, n int, cause error) error {
	return &lineError{sentinel: sentinel, name: name, line: n, cause: cause}
}

// eachLine calls fn with each non-blank line of r (without its line ending) and its 1-based
// number; fn's error stops the read and comes back as it is. A line over maxLine bytes is
// ErrLineTooLong naming name and the line, found without holding more than maxLine bytes
// of it.
func eachLine(r io.Reader, name string, fn func(n int, line []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var buf []byte
	for n := 1; ; n++ {
		buf = buf[:0]
		for {
			chunk, err := br.ReadSlice('\n')
			if len(buf)+len(chunk) > maxLine+2 { // the line, "\r\n" at most
				return lineErr(ErrLineTooLong, name, n, fmt.Errorf("longer than %d bytes", maxLine))
			}
			buf = append(buf, chunk...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				if len(buf) == 0 {
					return nil
				}
				break
			}
			if err != nil {
				return fmt.Errorf("%s:%d: %w", name, n, err)
			}
			break
		}
		line := bytes.TrimRight(buf, "\r\n")
		if len(line) > maxLine {
			return lineErr(ErrLineTooLong, name, n, fmt.Errorf("longer than %d bytes", maxLine))
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
}

// ReadQueryFile reads the first limit (0: all) queries of a queries.jsonl ({"_id",
// "text"} a line; a batch file's lines may lack the id), in file order. A file without a
// query is an error naming it; a bad line is one naming its file and line.
func ReadQueryFile(path string, limit int) (ids, texts []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for line := 1; sc.Scan(); line++ {
		var q struct {
			ID   string `json:"_id"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		ids, texts = append(ids, q.ID), append(texts, q.Text)
		if limit > 0 && len(ids) == limit {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	if len(ids) == 0 {
		return nil, nil, errors.New(path + ": no queries")
	}
	return ids, texts, nil
}
