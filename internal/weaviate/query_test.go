package weaviate

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestFilterRendering(t *testing.T) {
	day := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		f    Filter
		gql  string
		rest string
	}{
		{"equal text", Where("docId", Equal, `a"b`),
			`{operator: Equal, path: ["docId"], valueText: "a\"b"}`,
			`{"operator":"Equal","path":["docId"],"valueText":"a\"b"}`},
		{"not equal int", Where("year", NotEqual, 2020),
			`{operator: NotEqual, path: ["year"], valueInt: 2020}`,
			`{"operator":"NotEqual","path":["year"],"valueInt":2020}`},
		{"greater than number", Where("score", GreaterThan, 0.5),
			`{operator: GreaterThan, path: ["score"], valueNumber: 0.5}`,
			`{"operator":"GreaterThan","path":["score"],"valueNumber":0.5}`},
		{"less or equal date", Where("at", LessThanEqual, day),
			`{operator: LessThanEqual, path: ["at"], valueDate: "2026-01-02T03:04:05Z"}`,
			`{"operator":"LessThanEqual","path":["at"],"valueDate":"2026-01-02T03:04:05Z"}`},
		{"bool", Where("ok", Equal, true),
			`{operator: Equal, path: ["ok"], valueBoolean: true}`,
			`{"operator":"Equal","path":["ok"],"valueBoolean":true}`},
		{"contains any", Where("tags", ContainsAny, []string{"x", "y"}),
			`{operator: ContainsAny, path: ["tags"], valueText: ["x","y"]}`,
			`{"operator":"ContainsAny","path":["tags"],"valueTextArray":["x","y"]}`},
		{"contains all ints", Where("n", ContainsAll, []int{1, 2}),
			`{operator: ContainsAll, path: ["n"], valueInt: [1,2]}`,
			`{"operator":"ContainsAll","path":["n"],"valueIntArray":[1,2]}`},
		{"and / or", AllOf(Where("a", Equal, "x"), AnyOf(Where("b", GreaterThanEqual, 1), Where("c", LessThan, 2.5))),
			`{operator: And, operands: [{operator: Equal, path: ["a"], valueText: "x"}, {operator: Or, operands: [{operator: GreaterThanEqual, path: ["b"], valueInt: 1}, {operator: LessThan, path: ["c"], valueNumber: 2.5}]}]}`,
			`{"operands":[{"operator":"Equal","path":["a"],"valueText":"x"},{"operands":[{"operator":"GreaterThanEqual","path":["b"],"valueInt":1},{"operator":"LessThan","path":["c"],"valueNumber":2.5}],"operator":"Or"}],"operator":"And"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gql, err := tc.f.graphQL()
			if err != nil {
				t.Fatal(err)
			}
			if gql != tc.gql {
				t.Errorf("graphQL:\n got %s\nwant %s", gql, tc.gql)
			}
			rest, err := tc.f.rest()
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(rest); string(got) != tc.rest {
				t.Errorf("rest:\n got %s\nwant %s", got, tc.rest)
			}
		})
	}
}

func TestFilterInvalid(t *testing.T) {
	cases := []struct {
		name string
		f    Filter
	}{
		{"unknown operator", Filter{Operator: "Near", Path: "a", Value: "x"}},
		{"bad path", Where("a b", Equal, "x")},
		{"unsupported value", Where("a", Equal, struct{}{})},
		{"list with Equal", Where("a", Equal, []string{"x"})},
		{"scalar with ContainsAny", Where("a", ContainsAny, "x")},
		{"empty and", AllOf()},
		{"bad operand", AnyOf(Where("a", Equal, "x"), Where("", Equal, "y"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.f.graphQL(); err == nil {
				t.Fatal("graphQL: no error")
			}
			if _, err := tc.f.rest(); err == nil {
				t.Fatal("rest: no error")
			}
		})
	}
}

// graphQLOf returns the query string of a recorded GraphQL request.
func graphQLOf(t *testing.T, r recorded) string {
	t.Helper()
	if r.Method != "POST" || r.Path != "/v1/graphql" {
		t.Fatalf("request %s %s, want POST /v1/graphql", r.Method, r.Path)
	}
	var body struct{ Query string }
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	return body.Query
}

func TestSearchRequests(t *testing.T) {
	answer := `{"data":{"Get":{"Doc":[
		{"docId":"d1","_additional":{"id":"u1","score":"1.5","explainScore":"(bm25) ..."}},
		{"docId":"d2","_additional":{"id":"u2","score":0.25,"distance":null}}]}}}`
	vecAnswer := `{"data":{"Get":{"Doc":[{"docId":"d3","_additional":{"id":"u3","distance":0.25}}]}}}`
	where := AllOf(Where("tags", ContainsAny, []string{"x"}), Where("year", GreaterThan, 2000))
	cases := []struct {
		name   string
		run    func(c *Client) ([]Hit, error)
		answer string
		want   []string // parts of the GraphQL query
		hits   []Hit
	}{
		{"bm25", func(c *Client) ([]Hit, error) {
			return c.BM25(context.Background(), Query{Class: "Doc", Text: `say "hi"`, Limit: 10, Consistency: Quorum, Explain: true})
		}, answer,
			[]string{`Get { Doc(bm25: {query: "say \"hi\"", properties: ["title","text"]}, limit: 10, consistencyLevel: QUORUM)`, `_additional { id score explainScore }`, `docId`},
			[]Hit{{ID: "d1", UUID: "u1", Score: 1.5, Explain: "(bm25) ..."}, {ID: "d2", UUID: "u2", Score: 0.25}}},
		{"bm25 with filter and boosted property", func(c *Client) ([]Hit, error) {
			return c.BM25(context.Background(), Query{Class: "Doc", Text: "q", Limit: 5, Properties: []string{"title^2", "text"}, Where: where})
		}, answer,
			[]string{`bm25: {query: "q", properties: ["title^2","text"]}, limit: 5, where: {operator: And, operands: [{operator: ContainsAny, path: ["tags"], valueText: ["x"]}, {operator: GreaterThan, path: ["year"], valueInt: 2000}]})`, `_additional { id score }`},
			nil},
		{"nearVector", func(c *Client) ([]Hit, error) {
			return c.NearVector(context.Background(), Query{Class: "Doc", Vector: []float32{1, 0.5, -0.25}, Limit: 3, Consistency: One})
		}, vecAnswer,
			[]string{`Doc(nearVector: {vector: [1,0.5,-0.25]}, limit: 3, consistencyLevel: ONE)`, `_additional { id distance }`},
			[]Hit{{ID: "d3", UUID: "u3", Distance: 0.25, Score: 0.75}}},
		{"hybrid", func(c *Client) ([]Hit, error) {
			return c.Hybrid(context.Background(), Query{Class: "Doc", Text: "q", Vector: []float32{1, 0}, Alpha: 0.5, Limit: 7, Consistency: All, Explain: true, Where: Where("docId", NotEqual, "x")})
		}, answer,
			[]string{`hybrid: {query: "q", alpha: 0.5, fusionType: rankedFusion, properties: ["title","text"], vector: [1,0]}`, `limit: 7`, `where: {operator: NotEqual, path: ["docId"], valueText: "x"}`, `consistencyLevel: ALL`, `_additional { id score explainScore }`},
			nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(int, *http.Request, []byte) (int, string) { return 200, tc.answer })
			c := newClient(t, Config{Endpoints: []string{f.URL}})
			hits, err := tc.run(c)
			if err != nil {
				t.Fatal(err)
			}
			q := graphQLOf(t, f.requests()[0])
			for _, w := range tc.want {
				if !strings.Contains(q, w) {
					t.Errorf("query %s\nlacks %s", q, w)
				}
			}
			if tc.hits != nil && !jsonEqual(hits, tc.hits) {
				t.Errorf("hits %+v, want %+v", hits, tc.hits)
			}
		})
	}
}

func TestSearchInvalid(t *testing.T) {
	f := newFake(t, ok())
	c := newClient(t, Config{Endpoints: []string{f.URL}})
	ctx := context.Background()
	calls := []struct {
		name string
		run  func() error
	}{
		{"no limit", func() error { _, err := c.BM25(ctx, Query{Class: "Doc", Text: "q"}); return err }},
		{"bad class", func() error { _, err := c.BM25(ctx, Query{Class: "Doc{", Text: "q", Limit: 1}); return err }},
		{"bad consistency", func() error {
			_, err := c.BM25(ctx, Query{Class: "Doc", Text: "q", Limit: 1, Consistency: "TWO"})
			return err
		}},
		{"bad property", func() error {
			_, err := c.BM25(ctx, Query{Class: "Doc", Text: "q", Limit: 1, Properties: []string{"a)"}})
			return err
		}},
		{"empty vector", func() error { _, err := c.NearVector(ctx, Query{Class: "Doc", Limit: 1}); return err }},
		{"alpha > 1", func() error { _, err := c.Hybrid(ctx, Query{Class: "Doc", Limit: 1, Alpha: 2}); return err }},
		{"bad filter", func() error {
			_, err := c.BM25(ctx, Query{Class: "Doc", Text: "q", Limit: 1, Where: Where("a", Equal, 1i)})
			return err
		}},
	}
	for _, tc := range calls {
		if err := tc.run(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests sent for invalid queries", n)
	}
}

func TestCount(t *testing.T) {
	f := newFake(t, func(int, *http.Request, []byte) (int, string) {
		return 200, `{"data":{"Aggregate":{"Doc":[{"meta":{"count":42}}]}}}`
	})
	c := newClient(t, Config{Endpoints: []string{f.URL}})
	n, err := c.Count(context.Background(), "Doc", Where("year", Equal, 1))
	if err != nil || n != 42 {
		t.Fatalf("Count = %d, %v", n, err)
	}
	q := graphQLOf(t, f.requests()[0])
	if want := `{ Aggregate { Doc(where: {operator: Equal, path: ["year"], valueInt: 1}) { meta { count } } } }`; q != want {
		t.Fatalf("query %s, want %s", q, want)
	}
}
