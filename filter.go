package memory

import (
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/agentmem/memory/internal/docfilter"
)

// Where filters documents on metadata, with Chroma's operators:
//
//	{"source": "wiki"}                          // equality
//	{"year": {"$gte": 2020}}                    // $eq $ne $gt $gte $lt $lte
//	{"lang": {"$in": ["go", "rust"]}}           // $in $nin
//	{"$and": [{...}, {...}]}, {"$or": [...]}    // combinations
//
// List-valued metadata ({"tags": ["go", "db"]}) matches a condition when one of its
// values does: {"tags": "go"} and {"tags": {"$in": ["go", "c"]}} match it, and
// {"tags": {"$ne": "go"}} or $nin when none of its values is an operand. $contains and
// $not_contains say the same of lists ({"tags": {"$contains": "go"}}, Chroma's spelling;
// on a single value they mean $eq and $ne), and $contains with a list wants every one
// of its values ({"tags": {"$contains": ["go", "db"]}}, Weaviate's ContainsAll).
//
// Several keys in one object are combined with AND. Comparisons ($gt...) take numbers or
// strings (compared as such). A document without the key matches no condition on it
// except $ne and $nin, which it matches (as Chroma does since 0.5.12: "not equal to go"
// holds for a document with no "lang"). Numbers compare by value (1 == 1.0).
type Where map[string]any

// WhereDocument filters on the document's title and text:
//
//	{"$contains": "needle"}, {"$not_contains": "needle"}, {"$and": [...]}, {"$or": [...]}
//	{"$regex": "(?i)error \\d+"}, {"$not_regex": "..."}
//
// $contains is a case-sensitive substring of the title or the text. $regex is an RE2
// pattern (Go's regexp syntax: no backreferences or lookaround) found in the title or
// the text; matching costs time linear in the text, and a pattern over
// MaxRegexBytes bytes or compiling to more than MaxRegexInsts instructions is
// ErrFilterTooLarge.
type WhereDocument map[string]any

// ParseWhere decodes a JSON Where filter and checks it.
func ParseWhere(data []byte) (Where, error) {
	var w Where
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: where: %v", ErrInvalidFilter, err)
	}
	if _, err := docfilter.CompilePred(w); err != nil {
		return nil, err
	}
	return w, nil
}

// ParseWhereDocument decodes a JSON WhereDocument filter and checks it.
func ParseWhereDocument(data []byte) (WhereDocument, error) {
	var w WhereDocument
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: where_document: %v", ErrInvalidFilter, err)
	}
	if _, err := docfilter.CompileDocument(w); err != nil {
		return nil, err
	}
	return w, nil
}

// filterScan, when set, makes searches evaluate a Where by scanning the store of record
// instead of the BM25 index's metadata terms (tests compare the two).
var filterScan atomic.Bool

// Caps on the size of one Where or WhereDocument filter. A filter over any of them, over
// 1,024 conditions or over 4 MiB is ErrFilterTooLarge (which also matches
// ErrInvalidFilter), found by a walk of the filter before anything is compiled, so a
// hostile filter costs no more than its own decoding.
const (
	// MaxFilterDepth caps the nesting of $and/$or lists (a flat filter has depth 0).
	MaxFilterDepth = docfilter.MaxDepth
	// MaxFilterInItems caps the operands of one $in or $nin list.
	MaxFilterInItems = docfilter.MaxInItems
	// MaxRegexBytes caps the length of one where_document $regex pattern.
	MaxRegexBytes = docfilter.MaxRegexBytes
	// MaxRegexInsts caps the compiled size of one $regex pattern (regexp/syntax
	// instructions).
	MaxRegexInsts = docfilter.MaxRegexInsts
)
