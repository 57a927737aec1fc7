package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/environ"
	"github.com/agentmem/memory/models"
	"github.com/agentmem/memory/vectorstore"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// modelFlags are the flags of an ONNX embedder's text handling beyond its prompts: the
// model preset and the token caps (see vectorstore.ResolveONNXSettings).
type modelFlags struct {
	preset                           string
	queryMaxTokens, passageMaxTokens int
}

// register adds --model-preset, --query-max-tokens and --passage-max-tokens to fs.
func (m *modelFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&m.preset, "model-preset", "", "ONNX embedder `PRESET`: auto (by the model's name, as Search-R1: a name with e5 gets "+
		"\"query: \"/\"passage: \", mean pooling and 256/180-token caps, one with bge the BGE query instruction "+
		"and CLS pooling), e5, bge, or none (the folder's sentence-transformers files) (default auto)")
	fs.Var((*tokenCap)(&m.queryMaxTokens), "query-max-tokens", "ONNX embedder: cap on a query's tokens (default: the preset's, else the model's)")
	fs.Var((*tokenCap)(&m.passageMaxTokens), "passage-max-tokens", "ONNX embedder: cap on a passage's tokens (default: the preset's, else the model's); part of the embedder's identity")
}

// tokenCap is a token cap flag: a whole number, 0 for the default.
type tokenCap int

func (c *tokenCap) String() string { return strconv.Itoa(int(*c)) }

// Type names the value in the help.
func (c *tokenCap) Type() string { return "N" }

func (c *tokenCap) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q: want a token count, not negative (0 = the default)", s)
	}
	*c = tokenCap(n)
	return nil
}

// apply puts the flags into spec.
func (m modelFlags) apply(spec embedderSpec) embedderSpec {
	spec.preset, spec.queryMaxTokens, spec.passageMaxTokens = m.preset, m.queryMaxTokens, m.passageMaxTokens
	return spec
}

func newModelsInfoCmd() *cobra.Command {
	var mf modelFlags
	var store string
	c := newCommand("models info", "show how the ONNX embedder handles text with a model, or the embedder a store records",
		func(_ context.Context, args []string, stdout, _ io.Writer) error {
			switch {
			case store != "" && len(args) > 0:
				return usagef("a model NAME_OR_DIR or --store DIR, not both")
			case store == "" && len(args) != 1:
				return usagef("want one model NAME_OR_DIR (or --store DIR), not %d", len(args))
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return modelsInfo(mf, store, name, stdout)
		})
	c.ValidArgsFunction = func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return modelNames(""), cobra.ShellCompDirectiveDefault
	}
	fs := c.Flags()
	mf.register(fs)
	fs.StringVarP(&store, "store", "s", "", "show the embedder the store `DIR` records (and how it is reloaded) instead of a model")
	completeDirs(fs, "store")
	completeValues(fs, presetValues, "model-preset")
	return c
}

// modelsInfo is `memory models info [--model-preset P] [--query-max-tokens N]
// [--passage-max-tokens N] NAME_OR_DIR` and `memory models info --store DIR`: what the
// manifest says of a model and how the ONNX embedder handles text with it (preset,
// prefixes, pooling, normalisation, token caps, what its identity records), or the
// embedder a store records and the settings it is reloaded with.
func modelsInfo(mf modelFlags, store, name string, stdout io.Writer) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	spec := mf.apply(embedderSpec{})
	if store != "" {
		m, err := openExisting(store, memory.ReadOnly())
		if err != nil {
			return err
		}
		id, dim, ok := m.StoredEmbedder()
		m.Close()
		if !ok {
			fmt.Fprintf(tw, "store\t%s\nembedder\tnone (BM25 only)\n", store)
			return nil
		}
		fmt.Fprintf(tw, "store\t%s\nembedder\t%s\ndimension\t%d\n", store, id, dim)
		rec, ok := vectorstore.ParseONNXIdentity(id)
		if !ok {
			return nil // a hashing or static embedder: no text handling to show
		}
		recPreset := rec.Preset
		if recPreset == "" {
			recPreset = vectorstore.PresetNone
		}
		fmt.Fprintf(tw, "recorded preset\t%s\n", recPreset)
		if spec.preset == "" || spec.preset == "auto" {
			spec.preset = recPreset
		}
		if spec.passageMaxTokens == 0 {
			spec.passageMaxTokens = rec.PassageMaxLength
		}
		p := rec.PassagePrefix
		spec.passagePrefix = &p
		name = rec.Model
	}
	if m, err := models.Lookup(name); err == nil {
		fmt.Fprintf(tw, "model\t%s\nkind\t%s\nrepository\t%s@%s\nlicense\t%s\n", m.Name, m.Kind, m.Repo, m.Revision, m.License)
		if m.Dim > 0 {
			fmt.Fprintf(tw, "dimension\t%d\n", m.Dim)
		}
		if m.Kind != "embedder" {
			return nil
		}
	}
	dir, err := modelDir(name)
	if err != nil {
		if !errors.Is(err, models.ErrNotPulled) && !errors.Is(err, models.ErrUnknownModel) {
			return err
		}
		fmt.Fprintf(tw, "folder\tnot here (`memory models pull %s`, or a folder of that name in $%s)\n", name, environ.Models)
		return presetInfo(tw, name, spec)
	}
	fmt.Fprintf(tw, "folder\t%s\n", dir)
	if vectorstore.IsModel2Vec(dir) {
		fmt.Fprintf(tw, "kind\tstatic (Model2Vec): no prefixes, presets or caps\n")
		return nil
	}
	s, err := vectorstore.ResolveONNXSettings(dir, vectorstore.ONNXOptions{Preset: spec.preset, QueryPrefix: spec.queryPrefix,
		PassagePrefix: spec.passagePrefix, QueryMaxLength: spec.queryMaxTokens, PassageMaxLength: spec.passageMaxTokens})
	if err != nil {
		return err
	}
	how := "asked for"
	if s.ByName {
		how = "chosen by the name"
	}
	fmt.Fprintf(tw, "preset\t%s (%s)\n", s.Preset, how)
	fmt.Fprintf(tw, "query prefix\t%s\npassage prefix\t%s\npooling\t%s\nnormalize\t%v\n", strconv.Quote(s.QueryPrefix), strconv.Quote(s.PassagePrefix), s.Pooling, s.Normalize)
	fmt.Fprintf(tw, "query max tokens\t%d\npassage max tokens\t%d\n", s.QueryMaxLength, s.PassageMaxLength)
	fmt.Fprintf(tw, "identity records\t%s\n", orNone(s.IDSuffix))
	return nil
}

// presetInfo shows what the preset of name would set, for a model whose folder is not here.
func presetInfo(w io.Writer, name string, spec embedderSpec) error {
	p := vectorstore.PresetForModel(name)
	how := "chosen by the name"
	if spec.preset != "" && spec.preset != "auto" {
		var err error
		if p, err = vectorstore.LookupPreset(spec.preset); err != nil {
			return err
		}
		how = "asked for"
	}
	fmt.Fprintf(w, "preset\t%s (%s)\n", p.Name, how)
	if p.Name == vectorstore.PresetNone {
		fmt.Fprintln(w, "settings\tthe folder's sentence-transformers files")
		return nil
	}
	fmt.Fprintf(w, "query prefix\t%s\npassage prefix\t%s\npooling\t%s\n", strconv.Quote(p.QueryPrefix), strconv.Quote(p.PassagePrefix), p.Pooling)
	if p.Normalize != nil {
		fmt.Fprintf(w, "normalize\t%v\n", *p.Normalize)
	}
	fmt.Fprintf(w, "query max tokens\t%d\npassage max tokens\t%d\n", p.QueryMaxLength, p.PassageMaxLength)
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "nothing beyond the model file"
	}
	return s
}
