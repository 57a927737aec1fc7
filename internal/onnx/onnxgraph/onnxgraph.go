// Package onnxgraph writes small ONNX models from scratch (a minimal protobuf encoder for
// the ModelProto subset ONNX Runtime needs) and builds BERT-shaped graphs with random
// weights. Tests and benchmarks use it to make fixtures at run time: models with unexpected
// interfaces, and a MiniLM-sized encoder or cross-encoder (6 layers, hidden 384) whose 90 MB
// of weights are never committed.
package onnxgraph

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// ONNX tensor element types used here.
const (
	Float = 1
	Int64 = 7
)

// Value describes a graph input or output: a tensor of an element type whose dimensions are
// fixed sizes (> 0) or named symbolic dimensions (Params[i] != "").
type Value struct {
	Name   string
	Type   int32
	Dims   []int64
	Params []string // symbolic names per dimension; "" = use Dims[i]
}

// Attr is a node attribute: exactly one of its value fields is used, chosen by Kind.
type Attr struct {
	Name string
	Kind int32 // 1 float, 2 int, 3 string, 7 ints
	F    float32
	I    int64
	S    string
	Ints []int64
}

// IntAttr returns an int attribute.
func IntAttr(name string, v int64) Attr { return Attr{Name: name, Kind: 2, I: v} }

// IntsAttr returns an ints attribute.
func IntsAttr(name string, v ...int64) Attr { return Attr{Name: name, Kind: 7, Ints: v} }

// FloatAttr returns a float attribute.
func FloatAttr(name string, v float32) Attr { return Attr{Name: name, Kind: 1, F: v} }

// Node is one operator application.
type Node struct {
	Op      string
	Inputs  []string
	Outputs []string
	Attrs   []Attr
}

// Tensor is an initializer: float32 data (F) or int64 data (I), with dims.
type Tensor struct {
	Name string
	Dims []int64
	F    []float32
	I    []int64
}

// Graph is a model under construction.
type Graph struct {
	Name    string
	Opset   int64
	Inputs  []Value
	Outputs []Value
	Nodes   []Node
	Inits   []Tensor
	Meta    map[string]string
	counter int
}

// Add appends a node with one fresh output and returns that output's name.
func (g *Graph) Add(op string, inputs []string, attrs ...Attr) string {
	g.counter++
	out := op + "_" + itoa(g.counter)
	g.Nodes = append(g.Nodes, Node{Op: op, Inputs: inputs, Outputs: []string{out}, Attrs: attrs})
	return out
}

// AddNamed appends a node whose single output has the given name.
func (g *Graph) AddNamed(out, op string, inputs []string, attrs ...Attr) string {
	g.Nodes = append(g.Nodes, Node{Op: op, Inputs: inputs, Outputs: []string{out}, Attrs: attrs})
	return out
}

// Const adds a float32 initializer and returns its name.
func (g *Graph) Const(name string, dims []int64, data []float32) string {
	g.Inits = append(g.Inits, Tensor{Name: name, Dims: dims, F: data})
	return name
}

// ConstInt adds an int64 initializer and returns its name.
func (g *Graph) ConstInt(name string, dims []int64, data []int64) string {
	g.Inits = append(g.Inits, Tensor{Name: name, Dims: dims, I: data})
	return name
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}

// Marshal encodes the graph as an ONNX ModelProto (IR version 8).
func (g *Graph) Marshal() []byte {
	opset := g.Opset
	if opset == 0 {
		opset = 14
	}
	var m []byte
	m = protowire.AppendTag(m, 1, protowire.VarintType) // ir_version
	m = protowire.AppendVarint(m, 8)
	m = appendString(m, 2, "memory/onnxgraph") // producer_name
	m = appendBytes(m, 7, g.marshalGraph())
	var op []byte
	op = appendString(op, 1, "")
	op = protowire.AppendTag(op, 2, protowire.VarintType)
	op = protowire.AppendVarint(op, uint64(opset))
	m = appendBytes(m, 8, op)
	for k, v := range g.Meta {
		var p []byte
		p = appendString(p, 1, k)
		p = appendString(p, 2, v)
		m = appendBytes(m, 14, p)
	}
	return m
}

func (g *Graph) marshalGraph() []byte {
	var b []byte
	for _, n := range g.Nodes {
		b = appendBytes(b, 1, marshalNode(n))
	}
	name := g.Name
	if name == "" {
		name = "graph"
	}
	b = appendString(b, 2, name)
	for _, t := range g.Inits {
		b = appendBytes(b, 5, marshalTensor(t))
	}
	for _, v := range g.Inputs {
		b = appendBytes(b, 11, marshalValue(v))
	}
	for _, v := range g.Outputs {
		b = appendBytes(b, 12, marshalValue(v))
	}
	return b
}

func marshalNode(n Node) []byte {
	var b []byte
	for _, in := range n.Inputs {
		b = appendString(b, 1, in)
	}
	for _, out := range n.Outputs {
		b = appendString(b, 2, out)
	}
	b = appendString(b, 3, n.Outputs[0]+"_node")
	b = appendString(b, 4, n.Op)
	for _, a := range n.Attrs {
		b = appendBytes(b, 5, marshalAttr(a))
	}
	return b
}

func marshalAttr(a Attr) []byte {
	var b []byte
	b = appendString(b, 1, a.Name)
	switch a.Kind {
	case 1:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.F))
	case 2:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(a.I))
	case 3:
		b = appendString(b, 4, a.S)
	case 7:
		for _, v := range a.Ints {
			b = protowire.AppendTag(b, 8, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(v))
		}
	}
	b = protowire.AppendTag(b, 20, protowire.VarintType) // type
	b = protowire.AppendVarint(b, uint64(a.Kind))
	return b
}

func marshalTensor(t Tensor) []byte {
	var b []byte
	for _, d := range t.Dims {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(d))
	}
	typ := Float
	var raw []byte
	if t.I != nil {
		typ = Int64
		raw = make([]byte, 8*len(t.I))
		for i, v := range t.I {
			binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
		}
	} else {
		raw = make([]byte, 4*len(t.F))
		for i, v := range t.F {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
		}
	}
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(typ))
	b = appendString(b, 8, t.Name)
	b = appendBytes(b, 9, raw)
	return b
}

func marshalValue(v Value) []byte {
	var shape []byte
	for i, d := range v.Dims {
		var dim []byte
		if i < len(v.Params) && v.Params[i] != "" {
			dim = appendString(dim, 2, v.Params[i])
		} else {
			dim = protowire.AppendTag(dim, 1, protowire.VarintType)
			dim = protowire.AppendVarint(dim, uint64(d))
		}
		shape = appendBytes(shape, 1, dim)
	}
	var tt []byte
	tt = protowire.AppendTag(tt, 1, protowire.VarintType)
	tt = protowire.AppendVarint(tt, uint64(v.Type))
	tt = appendBytes(tt, 2, shape)
	var typ []byte
	typ = appendBytes(typ, 1, tt)
	var b []byte
	b = appendString(b, 1, v.Name)
	b = appendBytes(b, 2, typ)
	return b
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}
