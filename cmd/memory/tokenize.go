package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmem/memory/internal/wordpiece"
	"github.com/agentmem/memory/vectorstore"
	"github.com/spf13/cobra"
)

// tokenizeOptions are the flags of memory tokenize.
type tokenizeOptions struct {
	model                       string
	pair, noSpecial, withTokens bool
	maxLen                      int
}

func newTokenizeCmd() *cobra.Command {
	var o tokenizeOptions
	c := newCommand("tokenize", "print the WordPiece token ids of texts (--model NAME_OR_DIR [--pair] TEXT...)",
		func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runTokenize(ctx, o, args, stdout, stderr)
		})
	c.ValidArgsFunction = cobra.NoFileCompletions
	fs := c.Flags()
	fs.StringVar(&o.model, "model", "", "model `NAME` in $MEMORY_MODELS, or a model folder, tokenizer.json or vocab.txt path")
	fs.BoolVar(&o.pair, "pair", false, "each TEXT is \"query<TAB>passage\": encode [CLS] q [SEP] p [SEP] with token_type_ids")
	fs.IntVar(&o.maxLen, "max-length", 0, "maximum tokens including [CLS]/[SEP] (0 = the model's configuration, else 512)")
	fs.BoolVar(&o.noSpecial, "no-special", false, "word-piece ids only: no [CLS]/[SEP], no truncation (the Model2Vec input; always so for a static model)")
	fs.BoolVar(&o.withTokens, "tokens", false, "also print the token strings")
	completeValuesOrFiles(fs, modelNames(""), "model")
	return c
}

// tokenizeOutput is one JSON line of `memory tokenize`.
type tokenizeOutput struct {
	InputIDs     []int64  `json:"input_ids"`
	TokenTypeIDs []int64  `json:"token_type_ids,omitempty"`
	Tokens       []string `json:"tokens,omitempty"`
}

// runTokenize implements
//
//	memory tokenize --model NAME_OR_DIR [--pair] [--max-length N] [--no-special] [--tokens] TEXT...
//
// It prints one JSON object per input: {"input_ids":[...]}, plus "token_type_ids" with
// --pair, where each input is "query<TAB>passage". NAME is a folder inside $MEMORY_MODELS,
// else a path to a model folder or to a tokenizer.json / vocab.txt file. A static
// (Model2Vec) model (see vectorstore.IsModel2Vec) never sees [CLS]/[SEP]: its ids are the word
// pieces alone, as with --no-special, and --pair and --max-length do not apply to it.
func runTokenize(ctx context.Context, o tokenizeOptions, texts []string, stdout, stderr io.Writer) error {
	switch {
	case o.model == "":
		return usagef("--model is required")
	case len(texts) == 0:
		return usagef("no TEXT given")
	case o.pair && o.noSpecial:
		return usagef("--pair and --no-special cannot be combined")
	case o.maxLen < 0:
		return usagef("--max-length must be >= 0")
	}
	if o.pair {
		for i, s := range texts {
			if !strings.Contains(s, "\t") {
				return usagef("--pair input %d has no TAB between query and passage", i+1)
			}
		}
	}
	path := tokenizeResolveModel(o.model)
	if tokenizeStaticModel(path) {
		switch {
		case o.pair:
			return usagef("--pair does not apply to %s: a static (Model2Vec) model encodes single texts", o.model)
		case o.maxLen > 0:
			return usagef("--max-length does not apply to %s: a static (Model2Vec) model reads word pieces, without [CLS]/[SEP]", o.model)
		}
		o.noSpecial = true
	}
	tok, err := tokenizeLoadTokenizer(path)
	if err != nil {
		return err
	}
	if o.maxLen > 0 {
		tok.SetMaxLength(o.maxLen)
	}
	enc := json.NewEncoder(stdout)
	for _, s := range texts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := enc.Encode(tokenizeText(tok, s, o.noSpecial, o.pair, o.withTokens)); err != nil {
			return err
		}
	}
	return nil
}

// tokenizeText encodes one input: its word pieces alone (noSpecial), a "query<TAB>passage"
// pair, or a single text with [CLS]/[SEP]; withTokens adds the token strings.
func tokenizeText(tok *wordpiece.Tokenizer, s string, noSpecial, pair, withTokens bool) tokenizeOutput {
	var out tokenizeOutput
	switch {
	case noSpecial:
		out.InputIDs = tok.Pieces(s)
		if withTokens {
			out.Tokens = tok.Tokenize(s)
		}
	case pair:
		q, p, _ := strings.Cut(s, "\t")
		e := tok.EncodePair(q, p)
		out.InputIDs, out.TokenTypeIDs = e.IDs, e.TypeIDs
		if withTokens {
			out.Tokens = e.Tokens
		}
	default:
		e := tok.Encode(s)
		out.InputIDs = e.IDs
		if withTokens {
			out.Tokens = e.Tokens
		}
	}
	if out.InputIDs == nil {
		out.InputIDs = []int64{}
	}
	return out
}

// tokenizeResolveModel maps a model name to a path: a folder of that name inside $MEMORY_MODELS
// when one exists, else the name itself as a path.
func tokenizeResolveModel(name string) string {
	if root := os.Getenv("MEMORY_MODELS"); root != "" && !filepath.IsAbs(name) {
		p := filepath.Join(root, name)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
	}
	return name
}

// tokenizeStaticModel reports whether path (a model folder, or a tokenizer file inside
// one) is a static (Model2Vec) model, whose input has no special tokens.
func tokenizeStaticModel(path string) bool {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		path = filepath.Dir(path)
	}
	return vectorstore.IsModel2Vec(path)
}

// tokenizeLoadTokenizer loads a model folder with wordpiece.LoadDir, or a single tokenizer file
// with the maximum length configured in the folder holding it.
func tokenizeLoadTokenizer(path string) (*wordpiece.Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: model %q (not in $MEMORY_MODELS, not a path)", wordpiece.ErrNotFound, path)
		}
		return nil, err
	}
	if st.IsDir() {
		return wordpiece.LoadDir(path)
	}
	tok, err := wordpiece.Load(path)
	if err != nil {
		return nil, err
	}
	n, err := wordpiece.DirMaxLength(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	tok.SetMaxLength(n)
	return tok, nil
}
