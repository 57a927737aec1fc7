// Package wordpiece is a pure-Go BERT WordPiece tokenizer that reproduces the Hugging Face
// fast (Rust) tokenizer for BERT-style tokenizer.json files: BertNormalizer, BertPreTokenizer,
// greedy longest-match WordPiece with a "##" continuation prefix, the [CLS] A [SEP] (B [SEP])
// template with token type ids, longest-first pair truncation and padding to the longest
// sequence of a batch.
//
// The truncation and padding blocks of tokenizer.json are ignored on purpose: the maximum
// length comes from [LoadDir] (sentence_bert_config.json, tokenizer_config.json) or
// [Tokenizer.SetMaxLength], and padding is done per batch by [Tokenizer.PadBatch].
package wordpiece

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
)

// Errors returned when loading a tokenizer.
var (
	// ErrNotFound reports a missing tokenizer file (or a directory without one).
	ErrNotFound = errors.New("wordpiece: tokenizer file not found")
	// ErrBadTokenizer reports a tokenizer file that cannot be parsed or is inconsistent
	// (bad JSON, missing vocabulary, missing special tokens, invalid ids).
	ErrBadTokenizer = errors.New("wordpiece: invalid tokenizer file")
	// ErrUnsupported reports a well-formed tokenizer.json this package does not implement
	// (a model other than WordPiece, or a normalizer/pre-tokenizer other than the BERT ones).
	ErrUnsupported = errors.New("wordpiece: unsupported tokenizer")
)

const (
	// DefaultMaxLength is the maximum sequence length used when no configuration says otherwise.
	DefaultMaxLength = 512
	// minMaxLength is the smallest usable maximum: [CLS] A [SEP] B [SEP] needs 3 slots.
	minMaxLength = 3
	// maxVocabID bounds token ids read from a file, so a corrupt file cannot make Load
	// allocate an absurd id table.
	maxVocabID = 1 << 24
	// absurdMaxLength is the threshold above which tokenizer_config.json's model_max_length
	// is a placeholder (transformers writes 1e30 for "no limit") and is ignored.
	absurdMaxLength = 100000
)

// Tokenizer is a BERT WordPiece tokenizer. It is safe for concurrent use after loading;
// SetMaxLength may be called concurrently with encoding.
type Tokenizer struct {
	vocab    map[string]int32
	idTok    []string // id -> token; "" for holes
	unkID    int32
	clsID    int32
	sepID    int32
	padID    int32
	prefix   string // continuing subword prefix, "##"
	maxChars int    // max_input_chars_per_word
	maxTok   int    // longest vocabulary entry in bytes (bounds the greedy search)

	cleanText    bool
	handleCJK    bool
	stripAccents bool
	lowercase    bool
	normalize    bool // false when tokenizer.json has "normalizer": null
	splitPunct   bool // BertPreTokenizer (true) or whitespace only (false)

	// special holds added tokens matched verbatim in the raw text, longest first.
	special []specialToken

	maxLen atomic.Int64
}

type specialToken struct {
	content string
	id      int32
}

// Encoding is the encoding of one input (a text or a pair of texts).
type Encoding struct {
	IDs     []int64  // token ids, starting with [CLS]
	TypeIDs []int64  // 0 for the first segment (and its [CLS]/[SEP]), 1 for the second
	Mask    []int64  // attention mask: all ones (padding happens in PadBatch)
	Tokens  []string // the token strings, for debugging and display
}

// Len is the number of tokens.
func (e Encoding) Len() int { return len(e.IDs) }

// Batch is a right-padded batch of encodings in row-major order: element (r, c) is at
// r*Cols+c. Padding uses the tokenizer's [PAD] id, type id 0 and mask 0.
type Batch struct {
	IDs, TypeIDs, Mask []int64
	Rows, Cols         int
}

// MaxLength is the maximum number of tokens Encode and EncodePair return, special tokens
// included.
func (t *Tokenizer) MaxLength() int { return int(t.maxLen.Load()) }

// SetMaxLength sets the maximum sequence length. n <= 0 restores DefaultMaxLength; values
// below 3 are raised to 3, the least a pair needs.
func (t *Tokenizer) SetMaxLength(n int) {
	switch {
	case n <= 0:
		n = DefaultMaxLength
	case n < minMaxLength:
		n = minMaxLength
	}
	t.maxLen.Store(int64(n))
}

// VocabSize is the number of token ids (the largest id plus one, added tokens included).
func (t *Tokenizer) VocabSize() int { return len(t.idTok) }

// PadID is the id of the [PAD] token (0 when the vocabulary has none).
func (t *Tokenizer) PadID() int64 { return int64(t.padID) }

// UnkID is the id of the unknown token.
func (t *Tokenizer) UnkID() int64 { return int64(t.unkID) }

// ClsID is the id of the [CLS] token.
func (t *Tokenizer) ClsID() int64 { return int64(t.clsID) }

// SepID is the id of the [SEP] token.
func (t *Tokenizer) SepID() int64 { return int64(t.sepID) }

// TokenID returns the id of a vocabulary entry.
func (t *Tokenizer) TokenID(tok string) (int64, bool) {
	id, ok := t.vocab[tok]
	return int64(id), ok
}

// Token returns the vocabulary entry of an id ("" when out of range).
func (t *Tokenizer) Token(id int64) string {
	if id < 0 || id >= int64(len(t.idTok)) {
		return ""
	}
	return t.idTok[id]
}

// Load reads a tokenizer from a tokenizer.json file, or from a plain vocab.txt (one token
// per line, any file name not ending in .json) with the default BERT uncased settings. The
// maximum length is DefaultMaxLength; use LoadDir to read it from the model's configuration.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fileErr(path, err)
	}
	var t *Tokenizer
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		t, err = parseJSON(data)
	} else {
		t, err = parseVocabTxt(data, vocabTxtOptions{lowercase: true, handleCJK: true})
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// LoadDir reads the tokenizer of a model directory: tokenizer.json, else vocab.txt (with
// do_lower_case, strip_accents and tokenize_chinese_chars from tokenizer_config.json). The
// maximum length is sentence_bert_config.json's max_seq_length, else tokenizer_config.json's
// model_max_length (values above 100000 are placeholders and ignored), else DefaultMaxLength.
func LoadDir(dir string) (*Tokenizer, error) {
	cfg, err := readTokenizerConfig(dir)
	if err != nil {
		return nil, err
	}
	var t *Tokenizer
	jsonPath := filepath.Join(dir, "tokenizer.json")
	if _, statErr := os.Stat(jsonPath); statErr == nil {
		t, err = Load(jsonPath)
	} else {
		vocabPath := filepath.Join(dir, "vocab.txt")
		data, rerr := os.ReadFile(vocabPath)
		if rerr != nil {
			if errors.Is(rerr, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w: no tokenizer.json or vocab.txt in %s", ErrNotFound, dir)
			}
			return nil, fileErr(vocabPath, rerr)
		}
		opts := vocabTxtOptions{lowercase: true, handleCJK: true}
		if cfg.DoLowerCase != nil {
			opts.lowercase = *cfg.DoLowerCase
		}
		if cfg.TokenizeChineseChars != nil {
			opts.handleCJK = *cfg.TokenizeChineseChars
		}
		opts.stripAccents = cfg.StripAccents
		t, err = parseVocabTxt(data, opts)
		if err != nil {
			err = fmt.Errorf("%s: %w", vocabPath, err)
		}
	}
	if err != nil {
		return nil, err
	}
	n, err := dirMaxLength(dir, cfg)
	if err != nil {
		return nil, err
	}
	t.SetMaxLength(n)
	return t, nil
}

// DirMaxLength reports the maximum sequence length configured in a model directory, with
// the same rules as LoadDir.
func DirMaxLength(dir string) (int, error) {
	cfg, err := readTokenizerConfig(dir)
	if err != nil {
		return 0, err
	}
	return dirMaxLength(dir, cfg)
}

type tokenizerConfig struct {
	ModelMaxLength       *float64 `json:"model_max_length"`
	DoLowerCase          *bool    `json:"do_lower_case"`
	StripAccents         *bool    `json:"strip_accents"`
	TokenizeChineseChars *bool    `json:"tokenize_chinese_chars"`
}

func readTokenizerConfig(dir string) (tokenizerConfig, error) {
	var cfg tokenizerConfig
	err := readOptionalJSON(filepath.Join(dir, "tokenizer_config.json"), &cfg)
	return cfg, err
}

func dirMaxLength(dir string, cfg tokenizerConfig) (int, error) {
	var sb struct {
		MaxSeqLength *float64 `json:"max_seq_length"`
	}
	if err := readOptionalJSON(filepath.Join(dir, "sentence_bert_config.json"), &sb); err != nil {
		return 0, err
	}
	if sb.MaxSeqLength != nil && *sb.MaxSeqLength >= 1 && *sb.MaxSeqLength <= absurdMaxLength {
		return int(*sb.MaxSeqLength), nil
	}
	if m := cfg.ModelMaxLength; m != nil && *m >= 1 && *m <= absurdMaxLength {
		return int(*m), nil
	}
	return DefaultMaxLength, nil
}

// readOptionalJSON decodes path into v; a missing file leaves v untouched.
func readOptionalJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fileErr(path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadTokenizer, path, err)
	}
	return nil
}

func fileErr(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: %w", ErrNotFound, path, err)
	}
	return fmt.Errorf("wordpiece: read %s: %w", path, err)
}

// tokenizerJSON is the subset of the Hugging Face tokenizer.json schema this package reads.
type tokenizerJSON struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Model         struct {
		Type                    string           `json:"type"`
		UnkToken                *string          `json:"unk_token"`
		ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    *int             `json:"max_input_chars_per_word"`
		Vocab                   map[string]int64 `json:"vocab"`
	} `json:"model"`
}

// addedTokenJSON is one entry of tokenizer.json's "added_tokens".
type addedTokenJSON struct {
	ID         int64  `json:"id"`
	Content    string `json:"content"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type bertNormalizerJSON struct {
	Type               string `json:"type"`
	CleanText          *bool  `json:"clean_text"`
	HandleChineseChars *bool  `json:"handle_chinese_chars"`
	StripAccents       *bool  `json:"strip_accents"`
	Lowercase          *bool  `json:"lowercase"`
}

func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || bytes.Equal(s, []byte("null"))
}

// parseJSON builds a Tokenizer from a Hugging Face tokenizer.json with a WordPiece model.
func parseJSON(data []byte) (*Tokenizer, error) {
	var tj tokenizerJSON
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadTokenizer, err)
	}
	m := tj.Model
	if m.Type != "" && m.Type != "WordPiece" {
		return nil, fmt.Errorf("%w: model type %q (want WordPiece)", ErrUnsupported, m.Type)
	}
	if len(m.Vocab) == 0 {
		return nil, fmt.Errorf("%w: empty or missing model.vocab", ErrBadTokenizer)
	}
	t := &Tokenizer{prefix: "##", maxChars: 100}
	if m.ContinuingSubwordPrefix != nil {
		t.prefix = *m.ContinuingSubwordPrefix
	}
	if m.MaxInputCharsPerWord != nil {
		if *m.MaxInputCharsPerWord <= 0 {
			return nil, fmt.Errorf("%w: max_input_chars_per_word %d", ErrBadTokenizer, *m.MaxInputCharsPerWord)
		}
		t.maxChars = *m.MaxInputCharsPerWord
	}
	unk := "[UNK]"
	if m.UnkToken != nil {
		unk = *m.UnkToken
	}
	if err := t.setNormalizer(tj.Normalizer); err != nil {
		return nil, err
	}
	if err := t.setPreTokenizer(tj.PreTokenizer); err != nil {
		return nil, err
	}
	if err := t.setJSONVocab(m.Vocab, tj.AddedTokens, unk); err != nil {
		return nil, err
	}
	t.SetMaxLength(DefaultMaxLength)
	return t, nil
}

// setNormalizer reads the tokenizer.json "normalizer": null turns normalisation off,
// a BertNormalizer sets the flags it names (each absent one at its Hugging Face
// default), any other type is ErrUnsupported.
func (t *Tokenizer) setNormalizer(raw json.RawMessage) error {
	if isNull(raw) {
		t.normalize = false
		return nil
	}
	var bn bertNormalizerJSON
	if err := json.Unmarshal(raw, &bn); err != nil {
		return fmt.Errorf("%w: normalizer: %v", ErrBadTokenizer, err)
	}
	if bn.Type != "BertNormalizer" {
		return fmt.Errorf("%w: normalizer %q (want BertNormalizer)", ErrUnsupported, bn.Type)
	}
	t.normalize = true
	t.cleanText = boolOr(bn.CleanText, true)
	t.handleCJK = boolOr(bn.HandleChineseChars, true)
	t.lowercase = boolOr(bn.Lowercase, true)
	t.stripAccents = boolOr(bn.StripAccents, t.lowercase)
	return nil
}

// setPreTokenizer reads the tokenizer.json "pre_tokenizer": null or BertPreTokenizer
// splits on whitespace and punctuation, WhitespaceSplit on whitespace only, any other
// type is ErrUnsupported.
func (t *Tokenizer) setPreTokenizer(raw json.RawMessage) error {
	t.splitPunct = true
	if isNull(raw) {
		return nil
	}
	var pt struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &pt); err != nil {
		return fmt.Errorf("%w: pre_tokenizer: %v", ErrBadTokenizer, err)
	}
	switch pt.Type {
	case "BertPreTokenizer":
	case "WhitespaceSplit":
		t.splitPunct = false
	default:
		return fmt.Errorf("%w: pre_tokenizer %q (want BertPreTokenizer)", ErrUnsupported, pt.Type)
	}
	return nil
}

// setJSONVocab installs the model's vocabulary merged with the added tokens (a token in
// both keeps the model's id), then registers the raw-text (normalized=false) added
// tokens as verbatim matches. An added token whose id is outside the vocabulary is
// ErrBadTokenizer.
func (t *Tokenizer) setJSONVocab(model map[string]int64, added []addedTokenJSON, unk string) error {
	vocab := make(map[string]int64, len(model)+len(added))
	for k, v := range model {
		vocab[k] = v
	}
	for _, at := range added {
		if _, ok := vocab[at.Content]; !ok {
			vocab[at.Content] = at.ID
		}
	}
	if err := t.setVocab(vocab, unk); err != nil {
		return err
	}
	for _, at := range added {
		if at.Normalized || at.Content == "" {
			continue // only raw-text (normalized=false) added tokens are matched verbatim
		}
		if at.ID < 0 || at.ID >= int64(len(t.idTok)) {
			return fmt.Errorf("%w: added token %q has id %d", ErrBadTokenizer, at.Content, at.ID)
		}
		t.special = append(t.special, specialToken{content: at.Content, id: int32(at.ID)})
	}
	sortSpecial(t.special)
	return nil
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

type vocabTxtOptions struct {
	lowercase    bool
	handleCJK    bool
	stripAccents *bool
}

func parseVocabTxt(data []byte, o vocabTxtOptions) (*Tokenizer, error) {
	vocab := make(map[string]int64, 32768)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var n int64
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		vocab[line] = n // a later duplicate wins, as in transformers' load_vocab
		n++
		if n > maxVocabID {
			return nil, fmt.Errorf("%w: vocabulary larger than %d lines", ErrBadTokenizer, maxVocabID)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadTokenizer, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: empty vocabulary", ErrBadTokenizer)
	}
	t := &Tokenizer{
		prefix: "##", maxChars: 100, normalize: true, cleanText: true,
		handleCJK: o.handleCJK, lowercase: o.lowercase, splitPunct: true,
	}
	t.stripAccents = boolOr(o.stripAccents, o.lowercase)
	if err := t.setVocab(vocab, "[UNK]"); err != nil {
		return nil, err
	}
	for _, s := range []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} {
		if id, ok := t.vocab[s]; ok {
			t.special = append(t.special, specialToken{content: s, id: id})
		}
	}
	sortSpecial(t.special)
	t.SetMaxLength(DefaultMaxLength)
	return t, nil
}

// sortSpecial orders special tokens longest first so the leftmost-longest match wins.
func sortSpecial(s []specialToken) {
	sort.SliceStable(s, func(i, j int) bool { return len(s[i].content) > len(s[j].content) })
}

// setVocab installs the vocabulary and resolves the special token ids.
func (t *Tokenizer) setVocab(vocab map[string]int64, unk string) error {
	maxID := int64(-1)
	for tok, id := range vocab {
		if id < 0 || id >= maxVocabID {
			return fmt.Errorf("%w: token %q has id %d", ErrBadTokenizer, tok, id)
		}
		maxID = max(maxID, id)
	}
	t.vocab = make(map[string]int32, len(vocab))
	t.idTok = make([]string, maxID+1)
	for tok, id := range vocab {
		t.vocab[tok] = int32(id)
		if prev := t.idTok[id]; prev == "" || tok < prev {
			t.idTok[id] = tok // deterministic when two entries share an id
		}
		t.maxTok = max(t.maxTok, len(tok))
	}
	var ok bool
	if t.unkID, ok = t.vocab[unk]; !ok {
		return fmt.Errorf("%w: unknown token %q not in vocabulary", ErrBadTokenizer, unk)
	}
	if t.clsID, ok = t.vocab["[CLS]"]; !ok {
		return fmt.Errorf("%w: [CLS] not in vocabulary", ErrBadTokenizer)
	}
	if t.sepID, ok = t.vocab["[SEP]"]; !ok {
		return fmt.Errorf("%w: [SEP] not in vocabulary", ErrBadTokenizer)
	}
	t.padID = t.vocab["[PAD]"] // 0 when absent
	return nil
}
