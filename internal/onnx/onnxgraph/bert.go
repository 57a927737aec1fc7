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
	H, nh := int64(cfg.Hidden), int64(cfg.Heads)
	hd := H / nh
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6d656d6f7279))
	normal := func(n int, mean, std float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(mean + std*rng.NormFloat64())
		}
		return v
	}
	g := &Graph{Name: "bert", Opset: 14, Meta: map[string]string{"synthetic": "random weights"}}
	dyn := []string{"batch_size", "sequence_length"}
	g.Inputs = append(g.Inputs, Value{Name: "input_ids", Type: Int64, Dims: []int64{0, 0}, Params: dyn})
	if !cfg.NoAttentionMask {
		g.Inputs = append(g.Inputs, Value{Name: "attention_mask", Type: Int64, Dims: []int64{0, 0}, Params: dyn})
	}
	if !cfg.NoTokenTypes {
		g.Inputs = append(g.Inputs, Value{Name: "token_type_ids", Type: Int64, Dims: []int64{0, 0}, Params: dyn})
	}

	scalar := func(name string, v float32) string { return g.Const(name, nil, []float32{v}) }
	one := scalar("one", 1)
	eps := scalar("ln_eps", 1e-12)
	half := scalar("half", 0.5)
	sqrt2 := scalar("sqrt2", float32(math.Sqrt2))
	scale := scalar("attn_scale", float32(math.Sqrt(float64(hd))))
	negMin := scalar("mask_min", -math.MaxFloat32)

	layerNorm := func(x, prefix string) string {
		gamma := g.Const(prefix+".gamma", []int64{H}, normal(int(H), 1, 0.1))
		beta := g.Const(prefix+".beta", []int64{H}, normal(int(H), 0, 0.1))
		mean := g.Add("ReduceMean", []string{x}, IntsAttr("axes", -1), IntAttr("keepdims", 1))
		d := g.Add("Sub", []string{x, mean})
		sq := g.Add("Mul", []string{d, d})
		v := g.Add("ReduceMean", []string{sq}, IntsAttr("axes", -1), IntAttr("keepdims", 1))
		std := g.Add("Sqrt", []string{g.Add("Add", []string{v, eps})})
		y := g.Add("Div", []string{d, std})
		return g.Add("Add", []string{g.Add("Mul", []string{y, gamma}), beta})
	}
	dense := func(x, prefix string, in, out int64) string {
		w := g.Const(prefix+".weight", []int64{in, out}, normal(int(in*out), 0, 1/math.Sqrt(float64(in))))
		b := g.Const(prefix+".bias", []int64{out}, normal(int(out), 0, 0.1))
		return g.Add("Add", []string{g.Add("MatMul", []string{x, w}), b})
	}

	// Embeddings.
	wordEmb := g.Const("embeddings.word", []int64{int64(cfg.Vocab), H}, normal(cfg.Vocab*int(H), 0, 1))
	posEmb := g.Const("embeddings.position", []int64{int64(cfg.MaxPositions), H}, normal(cfg.MaxPositions*int(H), 0, 0.5))
	x := g.Add("Gather", []string{wordEmb, "input_ids"}, IntAttr("axis", 0))
	shape := g.Add("Shape", []string{"input_ids"})
	seqLen := g.Add("Gather", []string{shape, g.ConstInt("idx1", nil, []int64{1})}, IntAttr("axis", 0))
	pos := g.Add("Range", []string{g.ConstInt("zero_i", nil, []int64{0}), seqLen, g.ConstInt("one_i", nil, []int64{1})})
	x = g.Add("Add", []string{x, g.Add("Gather", []string{posEmb, pos}, IntAttr("axis", 0))})
	if !cfg.NoTokenTypes {
		typeEmb := g.Const("embeddings.token_type", []int64{2, H}, normal(2*int(H), 0, 0.5))
		x = g.Add("Add", []string{x, g.Add("Gather", []string{typeEmb, "token_type_ids"}, IntAttr("axis", 0))})
	}
	x = layerNorm(x, "embeddings.ln")

	// Additive attention mask [B,1,1,S]: 0 on tokens, float32 min on padding.
	var maskAdd string
	if !cfg.NoAttentionMask {
		m := g.Add("Cast", []string{"attention_mask"}, IntAttr("to", Float))
		m = g.Add("Unsqueeze", []string{m, g.ConstInt("axes_12", []int64{2}, []int64{1, 2})})
		maskAdd = g.Add("Mul", []string{g.Add("Sub", []string{one, m}), negMin})
	}
	heads := g.ConstInt("shape_heads", []int64{4}, []int64{0, 0, nh, hd})
	merged := g.ConstInt("shape_merged", []int64{3}, []int64{0, 0, H})

	for l := 0; l < cfg.Layers; l++ {
		p := "layer" + itoa(l)
		split := func(t string, perm ...int64) string {
			return g.Add("Transpose", []string{g.Add("Reshape", []string{t, heads})}, IntsAttr("perm", perm...))
		}
		q := split(dense(x, p+".q", H, H), 0, 2, 1, 3)
		k := split(dense(x, p+".k", H, H), 0, 2, 3, 1)
		v := split(dense(x, p+".v", H, H), 0, 2, 1, 3)
		scores := g.Add("Div", []string{g.Add("MatMul", []string{q, k}), scale})
		if maskAdd != "" {
			scores = g.Add("Add", []string{scores, maskAdd})
		}
		probs := g.Add("Softmax", []string{scores}, IntAttr("axis", -1))
		ctx := g.Add("MatMul", []string{probs, v})
		ctx = g.Add("Reshape", []string{g.Add("Transpose", []string{ctx}, IntsAttr("perm", 0, 2, 1, 3)), merged})
		attn := dense(ctx, p+".attn_out", H, H)
		x = layerNorm(g.Add("Add", []string{attn, x}), p+".ln1")
		h := dense(x, p+".ff1", H, int64(cfg.Intermediate))
		erf := g.Add("Erf", []string{g.Add("Div", []string{h, sqrt2})})
		h = g.Add("Mul", []string{g.Add("Mul", []string{h, half}), g.Add("Add", []string{erf, one})})
		h = dense(h, p+".ff2", int64(cfg.Intermediate), H)
		x = layerNorm(g.Add("Add", []string{h, x}), p+".ln2")
	}

	if !cfg.Classifier {
		name := cfg.OutputName
		if name == "" {
			name = "last_hidden_state"
		}
		g.AddNamed(name, "Identity", []string{x})
		g.Outputs = append(g.Outputs, Value{Name: name, Type: Float, Dims: []int64{0, 0, H},
			Params: []string{"batch_size", "sequence_length", ""}})
		return g
	}
	cls := g.Add("Gather", []string{x, g.ConstInt("idx0", nil, []int64{0})}, IntAttr("axis", 1))
	pooled := g.Add("Tanh", []string{dense(cls, "pooler", H, H)})
	logits := dense(pooled, "classifier", H, 1)
	name := cfg.OutputName
	if name == "" {
		name = "logits"
	}
	g.AddNamed(name, "Identity", []string{logits})
	g.Outputs = append(g.Outputs, Value{Name: name, Type: Float, Dims: []int64{0, 1},
		Params: []string{"batch_size", ""}})
	return g
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
