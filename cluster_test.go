package memory

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/weaviate"
)

// Tests of the cluster backend that need no cluster (the rest: cluster_behaviour_test.go,
// build tag weaviate).

func TestClusterAddress(t *testing.T) {
	for _, c := range []struct {
		addr   string
		nodes  []string
		prefix string
		ok     bool
	}{
		{"weaviate://127.0.0.2:8080,127.0.0.3:8080", []string{"127.0.0.2:8080", "127.0.0.3:8080"}, defaultClassPrefix, true},
		{"weaviate://h:1/Agent7", []string{"h:1"}, "Agent7", true},
		{"weaviate://h:1/Agent7/", []string{"h:1"}, "Agent7", true},
		{"weaviate://h:1, ,h:2", []string{"h:1", "h:2"}, defaultClassPrefix, true},
		{"weaviate://", nil, "", false},
		{"weaviate://h:1/lower", nil, "", false},
		{"weaviate://h:1/Has_Underscore", nil, "", false},
	} {
		nodes, prefix, err := parseClusterAddress(c.addr)
		if c.ok != (err == nil) || c.ok && (!reflect.DeepEqual(nodes, c.nodes) || prefix != c.prefix) {
			t.Errorf("%s: %v %q %v", c.addr, nodes, prefix, err)
		}
		if !c.ok && !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", c.addr, err)
		}
	}
}

func TestClusterClassNames(t *testing.T) {
	cs := &clusterStore{prefix: "Memory"}
	seen := map[string]string{}
	for _, name := range []string{"default", "Default", "a b", "a_b", "a_5Fb", "é", "x/y", "123"} {
		cn := cs.className(name)
		if other, dup := seen[cn]; dup {
			t.Errorf("%q and %q share class %s", name, other, cn)
		}
		seen[cn] = name
		for i := 0; i < len(cn); i++ {
			c := cn[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
				t.Errorf("%q: class %s has %q", name, cn, c)
			}
		}
	}
	if got := cs.className("Ab c"); got != "Memory__41b_20c" {
		t.Errorf("className(Ab c) = %s", got)
	}
	if got := metaProp("Lang", 's'); got != "m__4Cang_s" {
		t.Errorf("metaProp = %s", got)
	}
}

// TestClusterOptionsRefused: options the cluster cannot honour are refused by Open, naming
// them, before any node is asked.
func TestClusterOptionsRefused(t *testing.T) {
	const addr = "weaviate://127.0.0.1:1"
	for name, c := range map[string]struct {
		opt  Option
		want error
	}{
		"ReadOnly":     {ReadOnly(), ErrNotSupported},
		"Analyzer":     {WithAnalyzer("en"), ErrNotSupported},
		"BM25Scoring":  {WithLuceneBM25(), ErrNotSupported},
		"RebuildIndex": {WithIndexRebuild(), ErrNotSupported},
		"ReEmbed":      {WithReEmbed(nil), ErrNotSupported},
		"Consistency":  {WithConsistency("MOST"), ErrInvalidOption},
		"Replication":  {WithReplication(-1), ErrInvalidOption},
		"Shards":       {WithShards(-1), ErrInvalidOption},
		"BM25":         {WithBM25(-1, 0.5), ErrInvalidOption},
	} {
		_, err := Open(addr, c.opt)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// TestClusterUnreachable: a cluster no node of which answers is ErrClusterUnavailable
// from Open, after the attempts allowed.
func TestClusterUnreachable(t *testing.T) {
	_, err := Open("weaviate://127.0.0.1:1", func(o *Options) {
		o.Cluster.MaxAttempts, o.Cluster.Timeout = 2, 5*time.Second
	})
	if !errors.Is(err, ErrClusterUnavailable) {
		t.Fatalf("Open of an unreachable cluster: %v, want ErrClusterUnavailable", err)
	}
}

func TestClusterFilterTranslation(t *testing.T) {
	props := map[string]weaviate.DataType{
		metaProp("kind", 's'): weaviate.TypeTextList,
		metaProp("n", 'n'):    weaviate.TypeNumberArr,
		metaProp("n", 's'):    weaviate.TypeTextList,
		metaProp("ok", 'b'):   weaviate.TypeBoolList,
	}
	kind, ns, nn, ok := metaProp("kind", 's'), metaProp("n", 's'), metaProp("n", 'n'), metaProp("ok", 'b')
	W := weaviate.Where
	for _, c := range []struct {
		name  string
		where Where
		want  clusterFilter
		err   error
	}{
		{"eq string", Where{"kind": "bird"}, clusterFilter{f: W(kind, weaviate.Equal, "bird")}, nil},
		{"eq number", Where{"n": 3}, clusterFilter{f: W(nn, weaviate.Equal, 3.0)}, nil},
		{"eq bool", Where{"ok": true}, clusterFilter{f: W(ok, weaviate.Equal, true)}, nil},
		{"unknown key", Where{"nokey": "x"}, matchNone, nil},
		{"type never stored", Where{"kind": 4}, matchNone, nil},
		{"range", Where{"n": Where{"$gte": 1, "$lt": 5}}, clusterFilter{f: weaviate.AllOf(W(nn, weaviate.GreaterThanEqual, 1.0), W(nn, weaviate.LessThan, 5.0))}, nil},
		{"in mixed", Where{"n": Where{"$in": []any{1, "1", true}}}, clusterFilter{f: weaviate.AnyOf(W(ns, weaviate.ContainsAny, []string{"1"}), W(nn, weaviate.ContainsAny, []float64{1}))}, nil},
		{"in none known", Where{"kind": Where{"$in": []any{1, 2}}}, matchNone, nil},
		{"contains all", Where{"kind": Where{"$contains": []any{"a", "b"}}}, clusterFilter{f: weaviate.AllOf(W(kind, weaviate.Equal, "a"), W(kind, weaviate.Equal, "b"))}, nil},
		{"and with none", Where{"$and": []Where{{"kind": "a"}, {"nokey": 1}}}, matchNone, nil},
		{"or with none", Where{"$or": []Where{{"kind": "a"}, {"nokey": 1}}}, clusterFilter{f: W(kind, weaviate.Equal, "a")}, nil},
		{"or", Where{"$or": []Where{{"kind": "a"}, {"ok": false}}}, clusterFilter{f: weaviate.AnyOf(W(kind, weaviate.Equal, "a"), W(ok, weaviate.Equal, false))}, nil},
		{"ne", Where{"kind": Where{"$ne": "a"}}, clusterFilter{}, ErrNotSupported},
		{"nin", Where{"kind": Where{"$nin": []any{"a"}}}, clusterFilter{}, ErrNotSupported},
		{"not_contains", Where{"kind": Where{"$not_contains": "a"}}, clusterFilter{}, ErrNotSupported},
		{"string order", Where{"kind": Where{"$gt": "a"}}, clusterFilter{}, ErrNotSupported},
	} {
		got, err := translateWhere(c.where, props)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: %v, want %v", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, %v\nwant %+v", c.name, got, err, c.want)
		}
	}
}

func TestClusterMetaValues(t *testing.T) {
	v := []any{"a", 1.0, true, "b", 2.0}
	if got := metaKinds(v); string(got) != "snb" {
		t.Errorf("kinds %q", got)
	}
	for kind, want := range map[byte][]any{'s': {"a", "b"}, 'n': {1.0, 2.0}, 'b': {true}} {
		if got := metaValues(v, kind); !reflect.DeepEqual(got, want) {
			t.Errorf("%c: %v, want %v", kind, got, want)
		}
	}
	if got := metaValues("x", 'n'); len(got) != 0 || got == nil {
		t.Errorf("a string's numbers: %#v, want an empty list", got)
	}
}
