package main

import (
	"github.com/agentmem/memory/vectorstore"
)

// setPrefixes applies the --query-prefix / --passage-prefix flags to opts; nil leaves the
// model folder's prompts (config_sentence_transformers.json) in force.
func setPrefixes(opts *vectorstore.ONNXOptions, query, passage *string) {
	opts.QueryPrefix = query
	opts.PassagePrefix = passage
}
