package main

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// jsonlFastCases are lines the fast path reads and lines it must leave to encoding/json.
var jsonlFastCases = []struct {
	line string
	fast bool
}{
	{`{"_id":"p1","title":"T","text":"some text","metadata":{"bucket":0,"lang":"en"}}`, true},
	{` { "id" : "a" , "text" : "x", "source": "s", "contents": "c" } `, true},
	{`{"_id":"p1","text":"café naïve 東京"}`, true},
	{`{}`, true},
	{`{"id":"a","metadata":{}}`, true},
	{`{"id":"a","metadata":{"n":-1.5e-3,"z":0,"b":true,"f":false,"s":"v"}}`, true},
	{`{"id":"a","text":"line\nbreak"}`, false},         // an escape
	{`{"id":"a","text":"tab	in"}`, false},              // a control character
	{"{\"id\":\"a\",\"text\":\"\xff\"}", false},        // invalid UTF-8
	{`{"id":7,"text":"x"}`, false},                     // a numeric id
	{`{"ID":"a","text":"x"}`, false},                   // another spelling
	{`{"id":"a","text":"x","text":"y"}`, false},        // a repeated key
	{`{"id":"a","embedding":[1,2]}`, false},            // another key
	{`{"id":"a","metadata":{"k":{"x":1}}}`, false},     // nested
	{`{"id":"a","metadata":{"k":"1","k":"2"}}`, false}, // a repeated metadata key
	{`{"id":"a","metadata":null}`, false},              // null
	{`{"id":"a","metadata":{"n":01}}`, false},          // not a JSON number
	{`{"id":"a","metadata":{"n":1e999}}`, false},       // out of range
	{`{"id":"a","metadata":{"n":1.}}`, false},          // not a JSON number
	{`{"id":"a","metadata":{"t":tru}}`, false},         // not a literal
	{`{"id":"a"} x`, false},                            // trailing data
	{`{"id":"a",}`, false},                             // a trailing comma
	{`{"id":"a"`, false},                               // cut short
	{`[1]`, false},                                     // not an object
	{`{"memory_export":{"version":1}}`, false},         // an export header
	{`{"id":"a","title":null}`, false},                 // null string
	{`{"id":"a","text":"x"}` + "\r\n", true},           // CRLF line end
	{`{"_id":"p","text":"` + strings.Repeat("é", 300) + `"}`, true},
}

// TestJSONLFast: each case takes the expected path, and what the fast path decodes equals
// encoding/json's decoding.
func TestJSONLFast(t *testing.T) {
	for _, c := range jsonlFastCases {
		var got jsonlDoc
		ok := decodeJSONLFast([]byte(c.line), &got)
		if ok != c.fast {
			t.Errorf("%q: fast path %v, want %v", c.line, ok, c.fast)
			continue
		}
		if ok {
			checkJSONLSame(t, c.line, got)
		}
	}
}

// checkJSONLSame fails t unless encoding/json decodes line without error into got.
func checkJSONLSame(t *testing.T, line string, got jsonlDoc) {
	t.Helper()
	var want jsonlDoc
	if err := json.Unmarshal([]byte(line), &want); err != nil {
		t.Fatalf("%q: the fast path accepted a line encoding/json rejects: %v", line, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: fast path %+v, encoding/json %+v", line, got, want)
	}
}

// TestJSONLFastRandom: random lines built from JSON pieces (some well formed, some not)
// decode as encoding/json decodes them whenever the fast path takes them.
func TestJSONLFastRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	keys := []string{`"_id"`, `"id"`, `"title"`, `"text"`, `"contents"`, `"source"`, `"metadata"`, `"Title"`, `"x"`}
	vals := []string{`"a"`, `""`, `"é東"`, `"a\"b"`, `7`, `-0.5e2`, `true`, `null`, `{}`, `{"k":1}`, `{"k":"v","n":2.5,"b":false}`, `{"k":[1]}`, `"` + "\xc3" + `"`, `[]`}
	ws := []string{"", " ", "\t", "\n "}
	fast := 0
	for range 20000 {
		var sb strings.Builder
		sb.WriteString(ws[r.IntN(len(ws))] + "{")
		for j := range r.IntN(5) {
			if j > 0 {
				sb.WriteString(",")
			}
			sb.WriteString(ws[r.IntN(len(ws))] + keys[r.IntN(len(keys))] + ws[r.IntN(len(ws))] + ":" + vals[r.IntN(len(vals))])
		}
		sb.WriteString("}" + ws[r.IntN(len(ws))])
		line := sb.String()
		if r.IntN(10) == 0 { // damage it
			i := r.IntN(len(line))
			line = line[:i] + string("{}\":,x"[r.IntN(6)]) + line[i+1:]
		}
		var got jsonlDoc
		if decodeJSONLFast([]byte(line), &got) {
			fast++
			checkJSONLSame(t, line, got)
		}
	}
	if fast < 1000 {
		t.Fatalf("only %d of 20,000 lines took the fast path", fast)
	}
}

// FuzzJSONLFast: whatever the fast path accepts, encoding/json accepts and decodes the same.
func FuzzJSONLFast(f *testing.F) {
	for _, c := range jsonlFastCases {
		f.Add([]byte(c.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var got jsonlDoc
		if decodeJSONLFast(line, &got) {
			checkJSONLSame(t, string(line), got)
		}
	})
}
