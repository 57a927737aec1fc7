package searchr1

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// overlapReranker scores a passage by the query words (over two letters) it contains, ties
// broken by length (shorter first): deterministic, so the examples can be compared.
type overlapReranker struct{}

func (overlapReranker) Score(_ context.Context, q string, ps []string) ([]float32, error) {
	out := make([]float32, len(ps))
	for i, p := range ps {
		lp := strings.ToLower(p)
		for _, w := range strings.Fields(strings.ToLower(strings.Trim(q, "?"))) {
			if len(w) > 2 && strings.Contains(lp, w) {
				out[i]++
			}
		}
		out[i] -= float32(len(p)) / 1000
	}
	return out, nil
}

// openAPIServers are the servers the examples of the descriptions name in x-server, over
// one store of three documents.
func openAPIServers(t *testing.T, c Compat) map[string]*httptest.Server {
	t.Helper()
	m, err := memory.Open("", memory.WithEmbedder(vectorstore.NewHashEmbedder(32)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.Add(context.Background(),
		memory.Document{ID: "fr", Title: "France", Text: "Paris is the capital of France."},
		memory.Document{ID: "de", Title: "Germany", Text: "Berlin is the capital of Germany."},
		memory.Document{ID: "it", Title: "Italy", Text: "Rome is the capital of Italy."},
	); err != nil {
		t.Fatal(err)
	}
	ready := func(context.Context) error { return nil }
	mode := func(md memory.Mode) []memory.SearchOption { return []memory.SearchOption{memory.WithMode(md)} }
	servers := map[string]*httptest.Server{}
	for name, o := range map[string]RetrieveOptions{
		"bm25":      {SearchOptions: mode(memory.BM25), Ready: ready},
		"dense":     {SearchOptions: mode(memory.Dense), Ready: ready},
		"rerank":    {SearchOptions: mode(memory.BM25), Ready: ready, Reranker: overlapReranker{}, RerankDepth: 3},
		"not-ready": {Ready: func(context.Context) error { return errors.New("indexes of collection \"\" are catching up") }},
	} {
		o.Compat = c
		srv := httptest.NewServer(NewRetrieveHandler(m, o))
		t.Cleanup(srv.Close)
		servers[name] = srv
	}
	return servers
}

// scoresZeroed replaces every "score" value of v with 0: the examples show real scores,
// which another version of the ranking may change by a little.
func scoresZeroed(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if _, ok := e.(float64); ok && k == "score" {
				e = 0.0
			}
			out[k] = scoresZeroed(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = scoresZeroed(e)
		}
		return out
	}
	return v
}

type oaExample struct {
	Value         any    `json:"value"`
	Server        string `json:"x-server"`
	SchemaInvalid bool   `json:"x-schema-invalid"`
}

type oaMedia struct {
	Examples map[string]oaExample `json:"examples"`
}

type oaOperation struct {
	RequestBody *struct {
		Content map[string]oaMedia `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Content map[string]oaMedia `json:"content"`
	} `json:"responses"`
}

// TestOpenAPIExamples sends every request example of both descriptions (the native and the
// search-r1 dialect) to the real handlers: each is answered with the status of the
// response example of the same name, the answer validates against the description (by
// libopenapi-validator) and equals the example (scores aside); each request example
// validates, except those marked x-schema-invalid, which must not. Every response example
// validates too. MEMORY_OPENAPI_RECORD=FILE writes the answers to FILE instead of
// comparing them (to regenerate the examples: see scripts/openapi-searchr1.py).
func TestOpenAPIExamples(t *testing.T) {
	record := os.Getenv("MEMORY_OPENAPI_RECORD")
	recorded := map[string]any{}
	for _, c := range []Compat{CompatNative, CompatSearchR1} {
		t.Run("compat="+string(c), func(t *testing.T) {
			spec := openAPI(c)
			doc, err := libopenapi.NewDocument(spec)
			if err != nil {
				t.Fatal(err)
			}
			v, errs := validator.NewValidator(doc)
			if len(errs) > 0 {
				t.Fatal(errors.Join(errs...))
			}
			servers := openAPIServers(t, c)
			var parsed struct {
				Paths map[string]map[string]oaOperation `json:"paths"`
			}
			if err := json.Unmarshal(spec, &parsed); err != nil {
				t.Fatal(err)
			}
			sent := 0
			for path, ops := range parsed.Paths {
				for method, op := range ops {
					method = strings.ToUpper(method)
					// Where each example name is answered: status code and example.
					answers := map[string]string{}
					for code, r := range op.Responses {
						for name := range r.Content["application/json"].Examples {
							if prev, dup := answers[name]; dup {
								t.Errorf("%s %s: response example %q under %s and %s", method, path, name, prev, code)
							}
							answers[name] = code
						}
					}
					type call struct {
						name, server string
						body         []byte
						invalid      bool
					}
					var calls []call
					if op.RequestBody != nil {
						for name, ex := range op.RequestBody.Content["application/json"].Examples {
							body, err := json.Marshal(ex.Value)
							if err != nil {
								t.Fatal(err)
							}
							calls = append(calls, call{name, ex.Server, body, ex.SchemaInvalid})
						}
					} else {
						for name, code := range answers {
							calls = append(calls, call{name: name, server: op.Responses[code].Content["application/json"].Examples[name].Server})
						}
					}
					handled := map[string]bool{}
					for _, cl := range calls {
						code, ok := answers[cl.name]
						if !ok {
							t.Errorf("%s %s: request example %q has no response example", method, path, cl.name)
							continue
						}
						handled[cl.name] = true
						want := op.Responses[code].Content["application/json"].Examples[cl.name]
						srv := servers[cmp.Or(cl.server, "bm25")]
						if srv == nil {
							t.Fatalf("%s %s %q: unknown x-server %q", method, path, cl.name, cl.server)
						}
						req := func() *http.Request {
							var body io.Reader
							if cl.body != nil {
								body = bytes.NewReader(cl.body)
							}
							r := httptest.NewRequest(method, "http://localhost"+path, body)
							if cl.body != nil {
								r.Header.Set("Content-Type", "application/json")
							}
							return r
						}
						if ok, verrs := v.ValidateHttpRequest(req()); ok == cl.invalid {
							t.Errorf("%s %s example %q: request valid = %v, want %v (%s)", method, path, cl.name, ok, !cl.invalid, verrString(verrs))
						}
						httpReq, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(cl.body))
						if err != nil {
							t.Fatal(err)
						}
						httpReq.Header.Set("Content-Type", "application/json")
						resp, err := http.DefaultClient.Do(httpReq)
						if err != nil {
							t.Fatal(err)
						}
						got, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						sent++
						if fmt.Sprint(resp.StatusCode) != code {
							t.Errorf("%s %s example %q: status %d, the description says %s: %s", method, path, cl.name, resp.StatusCode, code, got)
							continue
						}
						resp.Body = io.NopCloser(bytes.NewReader(got))
						if ok, verrs := v.ValidateHttpResponse(req(), resp); !ok {
							t.Errorf("%s %s example %q: the answer does not validate: %s\n%s", method, path, cl.name, verrString(verrs), got)
						}
						var gotV any
						if err := json.Unmarshal(got, &gotV); err != nil {
							t.Fatalf("%s %s example %q: %v: %s", method, path, cl.name, err, got)
						}
						if record != "" {
							recorded[fmt.Sprintf("%s %s %s %s %s", c, method, path, code, cl.name)] = gotV
						} else if !reflect.DeepEqual(scoresZeroed(gotV), scoresZeroed(want.Value)) {
							t.Errorf("%s %s example %q: answer\n%s\ndiffers from the example (scores aside)\n%s", method, path, cl.name, got, mustJSON(want.Value))
						}
					}
					// Response examples no request can produce here (500, 503...) must validate.
					for name, code := range answers {
						if handled[name] {
							continue
						}
						ex := op.Responses[code].Content["application/json"].Examples[name]
						body := mustJSON(ex.Value)
						var st int
						fmt.Sscan(code, &st)
						resp := &http.Response{StatusCode: st, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(body))}
						r := httptest.NewRequest(method, "http://localhost"+path, strings.NewReader(`{"queries": ["q"], "documents": [["d"]]}`))
						r.Header.Set("Content-Type", "application/json")
						if ok, verrs := v.ValidateHttpResponse(r, resp); !ok {
							t.Errorf("%s %s response example %q (%s) does not validate: %s", method, path, name, code, verrString(verrs))
						}
					}
				}
			}
			if sent < 10 {
				t.Errorf("only %d examples sent", sent)
			}
		})
	}
	if record != "" {
		data, _ := json.MarshalIndent(recorded, "", " ")
		if err := os.WriteFile(record, data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %d answers in %s", len(recorded), record)
	}
}

// TestOpenAPIDocument validates both descriptions as OpenAPI 3.1 documents (libopenapi's
// validator against the specification's schema) and checks the handler serves each at
// /openapi.json in its dialect.
func TestOpenAPIDocument(t *testing.T) {
	for _, c := range []Compat{CompatNative, CompatSearchR1} {
		t.Run("compat="+string(c), func(t *testing.T) {
			doc, err := libopenapi.NewDocument(openAPI(c))
			if err != nil {
				t.Fatal(err)
			}
			if v := doc.GetVersion(); !strings.HasPrefix(v, "3.1.") {
				t.Fatalf("version %q, want 3.1.x", v)
			}
			v, errs := validator.NewValidator(doc)
			if len(errs) > 0 {
				t.Fatal(errors.Join(errs...))
			}
			if ok, verrs := v.ValidateDocument(); !ok {
				t.Fatalf("not a valid OpenAPI 3.1 document: %s", verrString(verrs))
			}
			srv := httptest.NewServer(NewRetrieveHandler(&fakeSearcher{}, RetrieveOptions{Compat: c}))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/openapi.json")
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(got, openAPI(c)) {
				t.Fatalf("GET /openapi.json: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(got))
			}
			// Every endpoint the handler serves is described.
			var parsed struct {
				Paths map[string]any `json:"paths"`
			}
			_ = json.Unmarshal(got, &parsed)
			paths := make([]string, 0, len(parsed.Paths))
			for p := range parsed.Paths {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			if want := []string{"/health", "/ready", "/rerank", "/retrieve"}; !slices.Equal(paths, want) {
				t.Errorf("paths %v, want %v", paths, want)
			}
		})
	}
}

// TestOpenAPIDocumentRejectsInvalid: the validator used above does reject a document
// that is not OpenAPI 3.1 (so TestOpenAPIDocument can fail).
func TestOpenAPIDocumentRejectsInvalid(t *testing.T) {
	bad := bytes.Replace(openAPI(CompatNative), []byte(`"responses": {`), []byte(`"responses": 7, "x": {`), 1)
	doc, err := libopenapi.NewDocument(bad)
	if err != nil {
		return // refused already
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return
	}
	if ok, _ := v.ValidateDocument(); ok {
		t.Fatal("a document whose responses is a number validated")
	}
}

func verrString[E error](errs []E) string {
	var sb strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&sb, "%v; ", e)
	}
	return sb.String()
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}
