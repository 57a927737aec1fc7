package weaviate

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"
)

// TestReplicas: the node status answer is read into live and wanted replicas per shard; a
// member that did not answer the fan-out (Weaviate's 500 "node: NAME: ...") is named, not an
// error, nor is a 404 (a member that has not loaded the class); other failures are errors, after one pass over the nodes and no more.
func TestReplicas(t *testing.T) {
	const three = `{"nodes":[
	 {"name":"node1","status":"HEALTHY","shards":[{"name":"s1","class":"C","numberOfReplicas":3,"replicationFactor":3},{"name":"s2","class":"C","numberOfReplicas":3,"replicationFactor":3}]},
	 {"name":"node2","status":"HEALTHY","shards":[{"name":"s1","class":"C","numberOfReplicas":3,"replicationFactor":3},{"name":"s2","class":"C","numberOfReplicas":3,"replicationFactor":3}]},
	 {"name":"node3","status":"HEALTHY","shards":[{"name":"s1","class":"C","numberOfReplicas":3,"replicationFactor":3}]}]}`
	for _, c := range []struct {
		name   string
		status int
		body   string
		want   Replicas
		err    error
		calls  int
	}{
		{"all live but one copy of s2", 200, three, Replicas{Shards: map[string]ShardReplicas{"s1": {3, 3}, "s2": {3, 2}}}, nil, 1},
		{"member not answering", 500, `{"error":[{"message":"node: node3: send http request: Get \"http://127.0.2.4:7303/nodes/status/C?output=verbose\": net/http: timeout awaiting response headers"}]}`,
			Replicas{Unanswered: "node3"}, nil, 1},
		{"other 5xx", 503, `{"error":[{"message":"shutting down"}]}`, Replicas{}, ErrUnavailable, 2},
		{"a member without the class", 404, `{"error":[{"message":"class \"C\" not found"}]}`, Replicas{Unanswered: "a node without class C"}, nil, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, func(int, *http.Request, []byte) (int, string) { return c.status, c.body })
			g := newFake(t, func(int, *http.Request, []byte) (int, string) { return c.status, c.body })
			cl := newClient(t, Config{Endpoints: []string{f.URL, g.URL}, MaxAttempts: 6})
			got, err := cl.Replicas(context.Background(), "C")
			if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if c.err == nil && !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			if n := len(f.requests()) + len(g.requests()); n != c.calls {
				t.Fatalf("%d requests, want %d", n, c.calls)
			}
			if r := f.requests(); len(r) > 0 && (r[0].Path != "/v1/nodes/C" || r[0].Query != "output=verbose") {
				t.Fatalf("request %s?%s", r[0].Path, r[0].Query)
			}
		})
	}
	if _, err := newClient(t, Config{Endpoints: []string{"http://127.0.0.1:1"}}).Replicas(context.Background(), "lower"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad class name: %v", err)
	}
}
