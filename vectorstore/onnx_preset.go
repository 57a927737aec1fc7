package vectorstore

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/memory/internal/onnx"
	"github.com/agentmem/memory/internal/wordpiece"
)

// Model presets: how the original Search-R1 code (search_r1/search/retrieval_server.py
// and index_builder.py) treats a dense retriever by its name. Pass one as
// [ONNXOptions].Preset; "" chooses by the model folder's name.
const (
	// PresetAuto chooses the preset by the model folder's name, as the original does: a
	// name that contains "e5" gets [PresetE5], one that contains "bge" [PresetBGE] (case
	// insensitive), any other [PresetNone].
	PresetAuto = ""
	// PresetE5 is E5's: "query: " before queries, "passage: " before passages, mean
	// pooling, L2 normalisation, queries cut to 256 tokens and passages to 180.
	PresetE5 = "e5"
	// PresetBGE is BGE's: the instruction "Represent this sentence for searching relevant
	// passages: " before queries and nothing before passages, the [CLS] vector, L2
	// normalisation, and the original's 256/180 token caps.
	PresetBGE = "bge"
	// PresetNone is a plain sentence-transformers model: prompts, pooling, normalisation
	// and maximum length come from the folder's own files (config_sentence_transformers.json,
	// 1_Pooling/config.json, modules.json, sentence_bert_config.json).
	PresetNone = "none"
)

// ModelPreset is what a preset sets. Options of [ONNXOptions] override each field.
type ModelPreset struct {
	// Name is the preset's name (PresetE5, PresetBGE or PresetNone).
	Name string
	// QueryPrefix and PassagePrefix are put before queries and passages.
	QueryPrefix, PassagePrefix string
	// Pooling is "mean" or "cls"; "" leaves the folder's.
	Pooling string
	// Normalize, when set, turns L2 normalisation on or off; nil leaves the folder's.
	Normalize *bool
	// QueryMaxLength and PassageMaxLength cap queries and passages in tokens, [CLS] and
	// [SEP] included; 0 leaves the folder's maximum length.
	QueryMaxLength, PassageMaxLength int
}

// The original's caps: retrieval_server.py encodes queries with max_length 256,
// index_builder.py passages with its default --max_length 180.
const (
	searchR1QueryMaxLength   = 256
	searchR1PassageMaxLength = 180
)

var presetTrue = true

var presets = []ModelPreset{
	{Name: PresetE5, QueryPrefix: "query: ", PassagePrefix: "passage: ", Pooling: "mean", Normalize: &presetTrue,
		QueryMaxLength: searchR1QueryMaxLength, PassageMaxLength: searchR1PassageMaxLength},
	{Name: PresetBGE, QueryPrefix: "Represent this sentence for searching relevant passages: ", Pooling: "cls", Normalize: &presetTrue,
		QueryMaxLength: searchR1QueryMaxLength, PassageMaxLength: searchR1PassageMaxLength},
	{Name: PresetNone},
}

// Presets lists the model presets (a copy).
func Presets() []ModelPreset {
	out := slices.Clone(presets)
	for i := range out {
		if out[i].Normalize != nil {
			v := *out[i].Normalize
			out[i].Normalize = &v
		}
	}
	return out
}

// LookupPreset returns the preset of name: "e5", "bge", or "none" (also
// "sentence-transformers"); the name of a model (PresetAuto's rule) is not accepted here,
// see [PresetForModel].
func LookupPreset(name string) (ModelPreset, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "sentence-transformers" {
		n = PresetNone
	}
	for _, p := range Presets() {
		if p.Name == n {
			return p, nil
		}
	}
	return ModelPreset{}, fmt.Errorf("%w %q (want auto, e5, bge or none)", errUnknownPreset, name)
}

// PresetForModel is the preset PresetAuto gives a model of the given name (a folder's
// base name or a repository id): [PresetE5] when it contains "e5", else [PresetBGE] when
// it contains "bge", else [PresetNone] (case insensitive, as the original's
// `"e5" in name.lower()`).
func PresetForModel(name string) ModelPreset {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "e5"):
		p, _ := LookupPreset(PresetE5)
		return p
	case strings.Contains(n, "bge"):
		p, _ := LookupPreset(PresetBGE)
		return p
	}
	p, _ := LookupPreset(PresetNone)
	return p
}

// ONNXSettings is how an [ONNXEmbedder] over a folder handles text, as
// [ResolveONNXSettings] works it out from the options, the preset and the folder's files.
type ONNXSettings struct {
	// Preset is the preset in force (PresetE5, PresetBGE or PresetNone); ByName is true when
	// PresetAuto chose it from the folder's name.
	Preset string
	ByName bool
	// QueryPrefix and PassagePrefix are put before queries and passages.
	QueryPrefix, PassagePrefix string
	// Pooling is "mean" or "cls"; Normalize is whether vectors are L2-normalised.
	Pooling   string
	Normalize bool
	// QueryMaxLength and PassageMaxLength are the token caps of queries and passages,
	// [CLS] and [SEP] included.
	QueryMaxLength, PassageMaxLength int
	// window is the folder's maximum length (before the caps and the MaxLength option).
	window int
	// IDSuffix is what the embedder's identity records beyond the model file: the preset
	// (+preset=NAME), a passage cap other than the preset's (+plen=N) and the passage
	// prefix (+passage="..."), the settings stored vectors depend on. Without a preset and
	// a passage prefix it is empty, the identity of stores made before presets existed.
	IDSuffix string
}

// ResolveONNXSettings reads the settings an [ONNXEmbedder] with opts would use for the
// model folder dir, from the folder's JSON files alone (the ONNX model is not loaded, and
// need not be there). Each setting comes from the option when it is set, else from the
// preset, else from the folder's files.
func ResolveONNXSettings(dir string, opts ONNXOptions) (ONNXSettings, error) {
	var s ONNXSettings
	var p ModelPreset
	if opts.Preset == PresetAuto || strings.EqualFold(opts.Preset, "auto") {
		p = PresetForModel(filepath.Base(filepath.Clean(dir)))
		s.ByName = true
	} else {
		var err error
		if p, err = LookupPreset(opts.Preset); err != nil {
			return s, err
		}
	}
	s.Preset = p.Name
	preset := p.Name != PresetNone
	read := func(name string, v any) error {
		return onnx.ReadJSON(filepath.Join(dir, name), v, errBadModel)
	}

	// Prompts.
	var st struct {
		Prompts map[string]string `json:"prompts"`
	}
	if !preset && (opts.QueryPrefix == nil || opts.PassagePrefix == nil) {
		if err := read("config_sentence_transformers.json", &st); err != nil {
			return s, err
		}
	}
	pick := func(opt *string, fromPreset string, names []string) string {
		if opt != nil {
			return *opt
		}
		if preset {
			return fromPreset
		}
		for _, n := range names {
			if v, ok := st.Prompts[n]; ok {
				return v
			}
		}
		return ""
	}
	s.QueryPrefix = pick(opts.QueryPrefix, p.QueryPrefix, stQueryPrompts)
	s.PassagePrefix = pick(opts.PassagePrefix, p.PassagePrefix, stPassagePrompts)

	// Pooling and normalisation.
	switch {
	case opts.Pooling != "":
		s.Pooling = opts.Pooling
	case p.Pooling != "":
		s.Pooling = p.Pooling
	default:
		var pc struct {
			CLS  bool `json:"pooling_mode_cls_token"`
			Mean bool `json:"pooling_mode_mean_tokens"`
		}
		if err := read(filepath.Join("1_Pooling", "config.json"), &pc); err != nil {
			return s, err
		}
		s.Pooling = "mean"
		if pc.CLS && !pc.Mean {
			s.Pooling = "cls"
		}
	}
	if s.Pooling != "mean" && s.Pooling != "cls" {
		return s, fmt.Errorf("%w: pooling %q (want mean or cls)", errBadModel, s.Pooling)
	}
	switch {
	case opts.Normalize != nil:
		s.Normalize = *opts.Normalize
	case p.Normalize != nil:
		s.Normalize = *p.Normalize
	default:
		var modules []struct {
			Type string `json:"type"`
		}
		if err := read("modules.json", &modules); err != nil {
			return s, err
		}
		for _, m := range modules {
			if m.Type == "sentence_transformers.models.Normalize" {
				s.Normalize = true
			}
		}
	}

	// Token caps: the option, else the shared MaxLength, else the preset's, else the
	// folder's; never over the model's position embeddings.
	folder, err := wordpiece.DirMaxLength(dir)
	if err != nil {
		return s, fmt.Errorf("%w: %w", errBadModel, err)
	}
	var cfg onnx.BERTConfig
	if err := read("config.json", &cfg); err != nil {
		return s, err
	}
	s.window = folder
	clamp := func(n int) int {
		if m := cfg.MaxPositionEmbeddings; m > 0 && n > m {
			n = m
		}
		return max(n, 3)
	}
	capOf := func(opt, fromPreset int) (effective, byDefault int) {
		byDefault = folder
		if opts.MaxLength > 0 {
			byDefault = opts.MaxLength
		}
		if preset && fromPreset > 0 {
			byDefault = fromPreset
		}
		effective = byDefault
		if opt > 0 {
			effective = opt
		} else if opts.MaxLength > 0 {
			effective = opts.MaxLength
		}
		return clamp(effective), clamp(byDefault)
	}
	s.QueryMaxLength, _ = capOf(opts.QueryMaxLength, p.QueryMaxLength)
	var plenDefault int
	s.PassageMaxLength, plenDefault = capOf(opts.PassageMaxLength, p.PassageMaxLength)

	if preset {
		s.IDSuffix += "+preset=" + p.Name
	}
	if s.PassageMaxLength != plenDefault {
		s.IDSuffix += "+plen=" + strconv.Itoa(s.PassageMaxLength)
	}
	if s.PassagePrefix != "" {
		// Vectors of passages embedded with another prefix are not comparable; no prefix
		// keeps the ID stores created before prefixes existed recorded.
		s.IDSuffix += passageMarker + strconv.Quote(s.PassagePrefix)
	}
	return s, nil
}

// passageMarker introduces the passage prefix in an ONNX embedder's identity; it is
// always the identity's last component.
const passageMarker = "+passage="

// ONNXIdentity is what an ONNX embedder's identity ([ONNXEmbedder.ID]) records.
type ONNXIdentity struct {
	// Model is the model folder's name; SHA256 the first 16 hex digits of its ONNX file's.
	Model, SHA256 string
	// Preset is the recorded preset ("" when none was in force, which includes stores made
	// before presets existed).
	Preset string
	// PassageMaxLength is the recorded passage cap (0 when it is the preset's or the
	// folder's).
	PassageMaxLength int
	// PassagePrefix is the recorded passage prefix ("" for none).
	PassagePrefix string
}

// ParseONNXIdentity reads an identity [ONNXEmbedder.ID] wrote; ok is false for anything
// else (another embedder's identity, or a malformed one).
func ParseONNXIdentity(id string) (ONNXIdentity, bool) {
	var out ONNXIdentity
	if strings.HasPrefix(id, "model2vec:") || strings.HasPrefix(id, "hash-") {
		return out, false
	}
	name, rest, ok := strings.Cut(id, "@sha256:")
	if !ok || name == "" {
		return out, false
	}
	out.Model = name
	rest, quoted, hasPrefix := strings.Cut(rest, passageMarker)
	if hasPrefix {
		p, err := strconv.Unquote(quoted)
		if err != nil {
			return out, false
		}
		out.PassagePrefix = p
	}
	parts := strings.Split(rest, "+")
	out.SHA256 = parts[0]
	for _, c := range parts[1:] {
		k, v, _ := strings.Cut(c, "=")
		switch k {
		case "preset":
			if _, err := LookupPreset(v); err != nil || v == PresetNone {
				return out, false
			}
			out.Preset = v
		case "plen":
			n, err := strconv.Atoi(v)
			if err != nil || n < 3 {
				return out, false
			}
			out.PassageMaxLength = n
		default:
			return out, false
		}
	}
	return out, true
}
