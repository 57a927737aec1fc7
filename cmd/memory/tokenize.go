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
)

func init() {
	register(command{
		name:    "tokenize",
		summary: "print the WordPiece token ids of texts (--model NAME_OR_DIR [--pair] TEXT...)",
		run:     runTokenize,
	})
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
func runTokenize(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tokenize", stderr)
	model := fs.String("model", "", "model `NAME` in $MEMORY_MODELS, or a model folder, tokenizer.json or vocab.txt path")
	pair := fs.Bool("pair", false, "each TEXT is \"query<TAB>passage\": encode [CLS] q [SEP] p [SEP] with token_type_ids")
	maxLen := fs.Int("max-length", 0, "maximum tokens including [CLS]/[SEP] (0 = the model's configuration, else 512)")
	noSpecial := fs.Bool("no-special", false, "word-piece ids only: no [CLS]/[SEP], no truncation (the Model2Vec input; always so for a static model)")
	withTokens := fs.Bool("tokens", false, "also print the token strings")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: memory tokenize --model NAME_OR_DIR [--pair] [--max-length N] [--no-special] [--tokens] TEXT...")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	texts := fs.Args()
	switch {
	case *model == "":
		fmt.Fprintln(stderr, "memory tokenize: --model is required")
		return errUsage
	case len(texts) == 0:
		fmt.Fprintln(stderr, "memory tokenize: no TEXT given")
		return errUsage
	case *pair && *noSpecial:
		fmt.Fprintln(stderr, "memory tokenize: --pair and --no-special cannot be combined")
		return errUsage
	case *maxLen < 0:
		fmt.Fprintln(stderr, "memory tokenize: --max-length must be >= 0")
		return errUsage
	}
	if *pair {
		for i, s := range texts {
			if !strings.Contains(s, "\t") {
				fmt.Fprintf(stderr, "memory tokenize: --pair input %d has no TAB between query and passage\n", i+1)
				return errUsage
			}
		}
	}
	path := tokenizeResolveModel(*model)
	if tokenizeStaticModel(path) {
		switch {
		case *pair:
			fmt.Fprintf(stderr, "memory tokenize: --pair does not apply to %s: a static (Model2Vec) model encodes single texts\n", *model)
			return errUsage
		case *maxLen > 0:
			fmt.Fprintf(stderr, "memory tokenize: --max-length does not apply to %s: a static (Model2Vec) model reads word pieces, without [CLS]/[SEP]\n", *model)
			return errUsage
		}
		*noSpecial = true
	}
	tok, err := tokenizeLoadTokenizer(path)
	if err != nil {
		return err
	}
	if *maxLen > 0 {
		tok.SetMaxLength(*maxLen)
	}
	enc := json.NewEncoder(stdout)
	for _, s := range texts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := enc.Encode(tokenizeText(tok, s, *noSpecial, *pair, *withTokens)); err != nil {
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
