package onnxgraph

import (
	"math"
	"math/rand/v2"
)

// BERTConfig sizes a BERT graph. The zero value of each size field takes the MiniLM-L6
// value (6 layers, hidden 384, 12 heads, intermediate 1536, vocab 30522, 512 positions).
type BERTConfig struct {
	Layers, Hidden, Heads, Intermediate, Vocab, MaxPositions int
	// Seed makes the random weights reproducible.
	Seed uint64
	// Classifier adds the cross-encoder head (pooler tanh + 1-logit dense) with output
	// "logits" [batch, 1] instead of "last_hidden_state" [batch, sequence, hidden].
	Classifier bool
	// NoTokenTypes drops the token_type_ids input.
	NoTokenTypes bool
	// NoAttentionMask drops the attention_mask input (for interface-checking tests).
	NoAttentionMask bool
	// OutputName renames the output (for interface-checking tests); "" = the usual name.
	OutputName string
}

// defaults fills each zero size field with its MiniLM-L6 value.
func (c *BERTConfig) defaults() {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&c.Layers, 6)
	def(&c.Hidden, 384)
	def(&c.Heads, 12)
	def(&c.Intermediate, 1536)
	def(&c.Vocab, 30522)
	def(&c.MaxPositions, 512)
}

// MiniLM is the all-MiniLM-L6-v2 / ms-marco-MiniLM-L-6-v2 shape.
func MiniLM(classifier bool) BERTConfig {
	return BERTConfig{Seed: 20261122, Classifier: classifier}
}

// BERT builds a post-LayerNorm BERT encoder with random weights (opset 14, plain ops with
// LayerNorm and GELU decomposed as in Hugging Face/Optimum exports), with int64 inputs
// input_ids, attention_mask and token_type_ids of shape [batch_size, sequence_length].
func BERT(cfg BERTConfig) *Graph {
	cfg.defaults()
	b := newBERTBuilder(cfg)
	x := b.embeddings()
	maskAdd := b.attentionMask()
	heads := b.g.ConstInt("shape_heads", []int64{4}, []int64{0, 0, b.nh, b.hd})
	merged := b.g.ConstInt("shape_merged", []int64{3}, []int64{0, 0, b.H})
	for l := 0; l < cfg.Layers; l++ {
		x = b.encoderLayer("layer"+itoa(l), x, maskAdd, heads, merged)
	}
	if !cfg.Classifier {
		b.hiddenStateOutput(x)
	} else {
		b.classifierHead(x)
	}
	return b.g
}

// bertBuilder holds what every part of a BERT graph shares: the graph, its sizes, the
// seeded random source (drawn in a fixed order, so a seed always gives the same
// weights) and the scalar constants.
type bertBuilder struct {
	g       *Graph
	cfg     BERTConfig
	H       int64 // hidden size
	nh      int64 // attention heads
	hd      int64 // size of one head
	rng     *rand.Rand
	one     string
	eps     string // LayerNorm epsilon
	half    string
	sqrt2   string
	scale   string // attention scale, sqrt(hd)
	maskMin string // float32 min, the additive mask on padding
}

// newBERTBuilder starts the graph for cfg (defaults already applied): its inputs and
// scalar constants.
func newBERTBuilder(cfg BERTConfig) *bertBuilder {
	b := &bertBuilder{cfg: cfg, H: int64(cfg.Hidden), nh: int64(cfg.Heads)}
	b.hd = b.H / b.nh
	b.rng = rand.New(rand.NewPCG(cfg.Seed, 0x6d656d6f7279))
	g := &Graph{Name: "bert", Opset: 14, Meta: map[string]string{"synthetic": "random weights"}}
	b.g = g
	dyn := []string{"batch_size", "sequence_length"}
	g.Inputs = append(g.Inputs, Value{Name: "input_ids", Type: Int64, Dims: []int64{0, 0}, Params: dyn})
	if !cfg.NoAttentionMask {
		g.Inputs = append(g.Inputs, Value{Name: "attention_mask", Type: Int64, Dims: []int64{0, 0}, Params: dyn})
	}
	if !cfg.NoTokenTypes {
		g.Inputs = append(g.Inputs, Value{Name: "token_type_ids", Type: Int64, Dims: []int64{0, 0}, Params: dyn})
	}
	scalar := func(name string, v float32) string { return g.Const(name, nil, []float32{v}) }
	b.one = scalar("one", 1)
	b.eps = scalar("ln_eps", 1e-12)
	b.half = scalar("half", 0.5)
	b.sqrt2 = scalar("sqrt2", float32(math.Sqrt2))
	b.scale = scalar("attn_scale", float32(math.Sqrt(float64(b.hd))))
	b.maskMin = scalar("mask_min", -math.MaxFloat32)
	return b
}

// normal draws n weights from N(mean, std²).
func (b *bertBuilder) normal(n int, mean, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(mean + std*b.rng.NormFloat64())
	}
	return v
}

// layerNorm normalises x over its last axis, decomposed into ReduceMean/Sub/Sqrt/Div as
// exports do, with a learned gamma and beta named after prefix.
func (b *bertBuilder) layerNorm(x, prefix string) string {
	g, H := b.g, b.H
	gamma := g.Const(prefix+".gamma", []int64{H}, b.normal(int(H), 1, 0.1))
	beta := g.Const(prefix+".beta", []int64{H}, b.normal(int(H), 0, 0.1))
	mean := g.Add("ReduceMean", []string{x}, IntsAttr("axes", -1), IntAttr("keepdims", 1))
	d := g.Add("Sub", []string{x, mean})
	sq := g.Add("Mul", []string{d, d})
	v := g.Add("ReduceMean", []string{sq}, IntsAttr("axes", -1), IntAttr("keepdims", 1))
	std := g.Add("Sqrt", []string{g.Add("Add", []string{v, b.eps})})
	y := g.Add("Div", []string{d, std})
	return g.Add("Add", []string{g.Add("Mul", []string{y, gamma}), beta})
}

// dense is x·W + b with an [in, out] weight and an [out] bias named after prefix.
func (b *bertBuilder) dense(x, prefix string, in, out int64) string {
	w := b.g.Const(prefix+".weight", []int64{in, out}, b.normal(int(in*out), 0, 1/math.Sqrt(float64(in))))
	bias := b.g.Const(prefix+".bias", []int64{out}, b.normal(int(out), 0, 0.1))
	return b.g.Add("Add", []string{b.g.Add("MatMul", []string{x, w}), bias})
}

// embeddings is the sum of the word, position and (unless NoTokenTypes) token-type
// embeddings of the input, layer-normalised: [B, S, H].
func (b *bertBuilder) embeddings() string {
	g, H, cfg := b.g, b.H, b.cfg
	wordEmb := g.Const("embeddings.word", []int64{int64(cfg.Vocab), H}, b.normal(cfg.Vocab*int(H), 0, 1))
	posEmb := g.Const("embeddings.position", []int64{int64(cfg.MaxPositions), H}, b.normal(cfg.MaxPositions*int(H), 0, 0.5))
	x := g.Add("Gather", []string{wordEmb, "input_ids"}, IntAttr("axis", 0))
	shape := g.Add("Shape", []string{"input_ids"})
	seqLen := g.Add("Gather", []string{shape, g.ConstInt("idx1", nil, []int64{1})}, IntAttr("axis", 0))
	pos := g.Add("Range", []string{g.ConstInt("zero_i", nil, []int64{0}), seqLen, g.ConstInt("one_i", nil, []int64{1})})
	x = g.Add("Add", []string{x, g.Add("Gather", []string{posEmb, pos}, IntAttr("axis", 0))})
	if !cfg.NoTokenTypes {
		typeEmb := g.Const("embeddings.token_type", []int64{2, H}, b.normal(2*int(H), 0, 0.5))
		x = g.Add("Add", []string{x, g.Add("Gather", []string{typeEmb, "token_type_ids"}, IntAttr("axis", 0))})
	}
	return b.layerNorm(x, "embeddings.ln")
}

// attentionMask is the additive attention mask [B,1,1,S]: 0 on tokens, float32 min on
// padding; "" when the graph has no attention_mask input.
func (b *bertBuilder) attentionMask() string {
	if b.cfg.NoAttentionMask {
		return ""
	}
	g := b.g
	m := g.Add("Cast", []string{"attention_mask"}, IntAttr("to", Float))
	m = g.Add("Unsqueeze", []string{m, g.ConstInt("axes_12", []int64{2}, []int64{1, 2})})
	return g.Add("Mul", []string{g.Add("Sub", []string{b.one, m}), b.maskMin})
}

// encoderLayer is one transformer layer over x [B, S, H]: multi-head self-attention
// (maskAdd added to the scores unless ""), then a GELU feed-forward block, each with a
// residual connection and a LayerNorm after it. heads and merged are the reshape
// targets splitting H into heads and back.
func (b *bertBuilder) encoderLayer(p, x, maskAdd, heads, merged string) string {
	g, H := b.g, b.H
	split := func(t string, perm ...int64) string {
		return g.Add("Transpose", []string{g.Add("Reshape", []string{t, heads})}, IntsAttr("perm", perm...))
	}
	q := split(b.dense(x, p+".q", H, H), 0, 2, 1, 3)
	k := split(b.dense(x, p+".k", H, H), 0, 2, 3, 1)
	v := split(b.dense(x, p+".v", H, H), 0, 2, 1, 3)
	scores := g.Add("Div", []string{g.Add("MatMul", []string{q, k}), b.scale})
	if maskAdd != "" {
		scores = g.Add("Add", []string{scores, maskAdd})
	}
	probs := g.Add("Softmax", []string{scores}, IntAttr("axis", -1))
	ctx := g.Add("MatMul", []string{probs, v})
	ctx = g.Add("Reshape", []string{g.Add("Transpose", []string{ctx}, IntsAttr("perm", 0, 2, 1, 3)), merged})
	attn := b.dense(ctx, p+".attn_out", H, H)
	x = b.layerNorm(g.Add("Add", []string{attn, x}), p+".ln1")
	h := b.dense(x, p+".ff1", H, int64(b.cfg.Intermediate))
	erf := g.Add("Erf", []string{g.Add("Div", []string{h, b.sqrt2})})
	h = g.Add("Mul", []string{g.Add("Mul", []string{h, b.half}), g.Add("Add", []string{erf, b.one})})
	h = b.dense(h, p+".ff2", int64(b.cfg.Intermediate), H)
	return b.layerNorm(g.Add("Add", []string{h, x}), p+".ln2")
}

// hiddenStateOutput makes x the graph's output, "last_hidden_state" (or OutputName)
// [batch_size, sequence_length, H].
func (b *bertBuilder) hiddenStateOutput(x string) {
	name := b.cfg.OutputName
	if name == "" {
		name = "last_hidden_state"
	}
	b.g.AddNamed(name, "Identity", []string{x})
	b.g.Outputs = append(b.g.Outputs, Value{Name: name, Type: Float, Dims: []int64{0, 0, b.H},
		Params: []string{"batch_size", "sequence_length", ""}})
}

// classifierHead adds the cross-encoder head over x: the pooler (tanh of a dense layer
// over the first token) and a 1-logit dense layer, output as "logits" (or OutputName)
// [batch_size, 1].
func (b *bertBuilder) classifierHead(x string) {
	g, H := b.g, b.H
	cls := g.Add("Gather", []string{x, g.ConstInt("idx0", nil, []int64{0})}, IntAttr("axis", 1))
	pooled := g.Add("Tanh", []string{b.dense(cls, "pooler", H, H)})
	logits := b.dense(pooled, "classifier", H, 1)
	name := b.cfg.OutputName
	if name == "" {
		name = "logits"
	}
	g.AddNamed(name, "Identity", []string{logits})
	g.Outputs = append(g.Outputs, Value{Name: name, Type: Float, Dims: []int64{0, 1},
		Params: []string{"batch_size", ""}})
}

// AddModel is a trivial model: float32 input "x" [n] and output "y" = x + x. It has none of
// the inputs a BERT consumer expects.
func AddModel() *Graph {
	g := &Graph{Name: "add", Opset: 14}
	g.Inputs = []Value{{Name: "x", Type: Float, Dims: []int64{0}, Params: []string{"n"}}}
	g.Outputs = []Value{{Name: "y", Type: Float, Dims: []int64{0}, Params: []string{"n"}}}
	g.AddNamed("y", "Add", []string{"x", "x"})
	return g
}
