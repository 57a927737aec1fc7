package main

import (
	"strconv"
	"strings"

	"github.com/agentmem/memory/vectorstore"
)

// setPrefixes applies the --query-prefix / --passage-prefix flags to opts; nil leaves the
// model folder's prompts (config_sentence_transformers.json) in force.
func setPrefixes(opts *vectorstore.ONNXOptions, query, passage *string) {
	opts.QueryPrefix = query
	opts.PassagePrefix = passage
}

// passageMarker separates an ONNX embedder's identity from the passage prefix it records.
const passageMarker = "+passage="

// recordedPassagePrefix is the passage prefix an ONNX embedder identity records ("" when
// none): a store's vectors are reproduced only with that very prefix, whatever the model
// folder's prompts say now. ok is false for identities that are not an ONNX model's.
func recordedPassagePrefix(id string) (prefix string, ok bool) {
	if strings.HasPrefix(id, "model2vec:") || strings.HasPrefix(id, "hash-") {
		return "", false
	}
	_, rest, found := strings.Cut(id, "@")
	if !found {
		return "", false
	}
	_, quoted, found := strings.Cut(rest, passageMarker)
	if !found {
		return "", true
	}
	p, err := strconv.Unquote(quoted)
	if err != nil {
		return "", false
	}
	return p, true
}
