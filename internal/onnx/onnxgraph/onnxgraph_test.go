package onnxgraph

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// fields returns the top-level field numbers of a protobuf message and the bytes of the
// length-delimited ones.
func fields(t *testing.T, b []byte) map[protowire.Number][][]byte {
	t.Helper()
	out := map[protowire.Number][][]byte{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		if typ == protowire.BytesType {
			v, n = protowire.ConsumeBytes(b)
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			t.Fatalf("bad field %d: %v", num, protowire.ParseError(n))
		}
		out[num] = append(out[num], v)
		b = b[n:]
	}
	return out
}

func TestMarshalStructure(t *testing.T) {
	g := BERT(BERTConfig{Layers: 1, Hidden: 8, Heads: 2, Intermediate: 16, Vocab: 50, MaxPositions: 16, Classifier: true})
	m := fields(t, g.Marshal())
	if len(m[7]) != 1 || len(m[8]) != 1 || len(m[1]) != 1 {
		t.Fatalf("model fields %v", m)
	}
	graph := fields(t, m[7][0])
	if len(graph[11]) != 3 || len(graph[12]) != 1 {
		t.Fatalf("%d inputs, %d outputs", len(graph[11]), len(graph[12]))
	}
	if len(graph[1]) != len(g.Nodes) || len(graph[5]) != len(g.Inits) {
		t.Fatalf("%d nodes / %d initializers encoded, graph has %d / %d", len(graph[1]), len(graph[5]), len(g.Nodes), len(g.Inits))
	}
	out := fields(t, graph[12][0])
	if string(out[1][0]) != "logits" {
		t.Fatalf("output %q", out[1][0])
	}
	// Parameter count: 50*8 word + 16*8 pos + 2*8 type + LN, 4 attention denses, FF, pooler, classifier.
	var params int
	for _, in := range g.Inits {
		params += len(in.F)
	}
	want := 50*8 + 16*8 + 2*8 + 2*8 + (4*(8*8+8) + 2*8 + (8*16 + 16) + (16*8 + 8) + 2*8) + (8*8 + 8) + (8 + 1) + 6 // + six scalar constants
	if params != want {
		t.Fatalf("%d float parameters, want %d", params, want)
	}
}

func TestMiniLMShape(t *testing.T) {
	c := MiniLM(false)
	c.defaults()
	if c.Layers != 6 || c.Hidden != 384 || c.Heads != 12 || c.Intermediate != 1536 || c.Vocab != 30522 || c.MaxPositions != 512 {
		t.Fatalf("%+v", c)
	}
	for n, want := range map[int]string{0: "0", 7: "7", 42: "42", 1234567: "1234567"} {
		if got := itoa(n); got != want {
			t.Errorf("itoa(%d) = %q", n, got)
		}
	}
}
