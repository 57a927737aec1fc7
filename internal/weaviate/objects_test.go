package weaviate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

type batchBody struct {
	Objects []objectJSON `json:"objects"`
}

// batchAnswer answers a batch request: every object SUCCESS except those fail() names.
func batchAnswer(body []byte, fail func(uuid string) string) string {
	var b batchBody
	json.Unmarshal(body, &b)
	var out []string
	for _, o := range b.Objects {
		msg := fail(o.ID)
		if msg == "-" {
			continue
		}
		if msg != "" {
			out = append(out, fmt.Sprintf(`{"id":%q,"result":{"errors":{"error":[{"message":%q}]}}}`, o.ID, msg))
		} else {
			out = append(out, fmt.Sprintf(`{"id":%q,"result":{}}`, o.ID))
		}
	}
	return "[" + strings.Join(out, ",") + "]"
}

func TestPutBatchRequest(t *testing.T) {
	f := newFake(t, func(_ int, _ *http.Request, body []byte) (int, string) {
		return 200, batchAnswer(body, func(string) string { return "" })
	})
	c := newClient(t, Config{Endpoints: []string{f.URL}})
	objs := []Object{
		{ID: "a", Title: "T", Text: "hello", Metadata: map[string]any{"tags": []string{"x"}, "year": 2001}, Vector: []float32{1, 0}},
		{ID: "b", Text: "world"},
	}
	if err := c.PutBatch(context.Background(), "Doc", Quorum, objs); err != nil {
		t.Fatal(err)
	}
	r := f.requests()[0]
	if r.Method != "POST" || r.Path != "/v1/batch/objects" || r.Query != "consistency_level=QUORUM" {
		t.Fatalf("request %s %s?%s", r.Method, r.Path, r.Query)
	}
	var b batchBody
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatal(err)
	}
	got := map[string]objectJSON{}
	for _, o := range b.Objects {
		got[o.ID] = o
	}
	a, ok := got[UUID("a")]
	if !ok || a.Class != "Doc" || a.Properties["docId"] != "a" || a.Properties["title"] != "T" ||
		a.Properties["text"] != "hello" || a.Properties["year"] != 2001.0 || !jsonEqual(a.Properties["tags"], []string{"x"}) ||
		!jsonEqual(a.Vector, []float32{1, 0}) {
		t.Fatalf("object a sent as %+v", a)
	}
	if bo := got[UUID("b")]; bo.Vector != nil || bo.Properties["docId"] != "b" {
		t.Fatalf("object b sent as %+v", bo)
	}
	if !strings.Contains(string(r.Body), `"vector":[1,0]`) || strings.Count(string(r.Body), `"vector"`) != 1 {
		t.Fatalf("vectors in body: %s", r.Body)
	}
}

func TestPutBatchObjectErrors(t *testing.T) {
	allMsg := `cannot achieve consistency level "ALL": put object: node3: connection refused`
	cases := []struct {
		name      string
		fail      func(round int, uuid string) string
		tries     int
		wantErr   error
		wantCalls int
		wantSent  []int // objects sent per call
	}{
		{"all succeed", func(int, string) string { return "" }, 3, nil, 1, []int{3}},
		{"one refused at ALL, then stored on retry", func(round int, u string) string {
			if round == 1 && u == UUID("b") {
				return allMsg
			}
			return ""
		}, 3, nil, 2, []int{3, 1}},
		{"refused at ALL every time", func(_ int, u string) string {
			if u == UUID("b") {
				return allMsg
			}
			return ""
		}, 3, ErrConsistency, 3, []int{3, 1, 1}},
		{"broadcast refusal is a consistency error", func(_ int, u string) string {
			if u == UUID("b") {
				return "broadcast: cannot reach enough replicas"
			}
			return ""
		}, 2, ErrConsistency, 2, []int{3, 1}},
		{"object missing from the answer is sent again", func(round int, u string) string {
			if round == 1 && u == UUID("a") {
				return "-" // batchAnswer leaves it out
			}
			return ""
		}, 3, nil, 2, []int{3, 1}},
		{"invalid object is not retried", func(_ int, u string) string {
			if u == UUID("c") {
				return `invalid text property 'year' on class 'Doc': not a string`
			}
			return ""
		}, 3, ErrInvalid, 1, []int{3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(n int, _ *http.Request, body []byte) (int, string) {
				return 200, batchAnswer(body, func(u string) string { return tc.fail(n, u) })
			})
			c := newClient(t, Config{Endpoints: []string{f.URL}, MaxAttempts: tc.tries})
			err := c.PutBatch(context.Background(), "Doc", All, []Object{{ID: "a"}, {ID: "b"}, {ID: "c"}})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			var be *BatchError
			if err != nil && (!errors.As(err, &be) || len(be.Failed) != 1) {
				t.Fatalf("err = %#v, want a *BatchError with one object", err)
			}
			reqs := f.requests()
			var sent []int
			for _, r := range reqs {
				var b batchBody
				json.Unmarshal(r.Body, &b)
				sent = append(sent, len(b.Objects))
				if r.Query != "consistency_level=ALL" {
					t.Fatalf("query %q", r.Query)
				}
			}
			if len(reqs) != tc.wantCalls || !jsonEqual(sent, tc.wantSent) {
				t.Fatalf("objects sent per call %v, want %v", sent, tc.wantSent)
			}
		})
	}
}

func TestPutBatchInvalid(t *testing.T) {
	f := newFake(t, ok())
	c := newClient(t, Config{Endpoints: []string{f.URL}})
	cases := [][]Object{
		{{ID: ""}},
		{{ID: "a", Metadata: map[string]any{"docId": "b"}}},
		{{ID: "a", Metadata: map[string]any{"bad key": 1}}},
	}
	for _, objs := range cases {
		if err := c.PutBatch(context.Background(), "Doc", Quorum, objs); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err = %v, want ErrInvalid", objs, err)
		}
	}
	if err := c.PutBatch(context.Background(), "Doc", "SOME", []Object{{ID: "a"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad consistency: err = %v", err)
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestGetDelete(t *testing.T) {
	f := newFake(t, func(_ int, r *http.Request, _ []byte) (int, string) {
		switch {
		case r.Method == "GET" && strings.HasSuffix(r.URL.Path, UUID("a")):
			return 200, `{"class":"Doc","id":"` + UUID("a") + `","properties":{"docId":"a","title":"T","text":"x","year":2001},"vector":[0.5,1]}`
		case r.Method == "DELETE" && strings.HasSuffix(r.URL.Path, UUID("a")):
			return 204, ``
		case r.Method == "DELETE" && r.URL.Path == "/v1/batch/objects":
			return 200, `{"results":{"matches":3,"successful":3,"failed":0}}`
		}
		return 404, ``
	})
	c := newClient(t, Config{Endpoints: []string{f.URL}})
	ctx := context.Background()
	o, err := c.Get(ctx, "Doc", Quorum, "a")
	if err != nil {
		t.Fatal(err)
	}
	want := Object{ID: "a", Title: "T", Text: "x", Metadata: map[string]any{"year": 2001.0}, Vector: []float32{0.5, 1}}
	if !jsonEqual(o, want) {
		t.Fatalf("Get = %+v, want %+v", o, want)
	}
	if _, err := c.Get(ctx, "Doc", Quorum, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get missing: %v", err)
	}
	if err := c.Delete(ctx, "Doc", All, "a"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "Doc", All, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete missing: %v", err)
	}
	n, err := c.DeleteWhere(ctx, "Doc", Quorum, Where("year", LessThan, 2000))
	if err != nil || n != 3 {
		t.Fatalf("DeleteWhere = %d, %v", n, err)
	}
	reqs := f.requests()
	wantReqs := []struct{ method, path, query string }{
		{"GET", "/v1/objects/Doc/" + UUID("a"), "include=vector&consistency_level=QUORUM"},
		{"GET", "/v1/objects/Doc/" + UUID("missing"), "include=vector&consistency_level=QUORUM"},
		{"DELETE", "/v1/objects/Doc/" + UUID("a"), "consistency_level=ALL"},
		{"DELETE", "/v1/objects/Doc/" + UUID("missing"), "consistency_level=ALL"},
		{"DELETE", "/v1/batch/objects", "consistency_level=QUORUM"},
	}
	if len(reqs) != len(wantReqs) {
		t.Fatalf("%d requests, want %d", len(reqs), len(wantReqs))
	}
	for i, w := range wantReqs {
		if reqs[i].Method != w.method || reqs[i].Path != w.path || reqs[i].Query != w.query {
			t.Errorf("request %d: %s %s?%s, want %s %s?%s", i, reqs[i].Method, reqs[i].Path, reqs[i].Query, w.method, w.path, w.query)
		}
	}
	wantBody := `{"dryRun":false,"match":{"class":"Doc","where":{"operator":"LessThan","path":["year"],"valueInt":2000}},"output":"minimal"}`
	if string(reqs[4].Body) != wantBody {
		t.Fatalf("batch delete body %s, want %s", reqs[4].Body, wantBody)
	}
}
