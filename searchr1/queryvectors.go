package searchr1

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/errkind"
)

// Query vectors on /retrieve: an extension of the Search-R1 request, beside its fields,
// which keep their meaning. A client that embeds its queries itself (on a GPU, with the
// model the store's vectors came from) sends them as
//
//	{"queries": [...], "query_vectors": [[0.01, ...], null, ...], "query_embedder": "e5-base-v2"}
//
// query_vectors[i] is the embedding of queries[i] (null: its text is embedded by the
// store); without "queries" every query is its vector alone. Dense recall searches the
// vectors as they are (memory.WithQueryVectors); a hybrid server's BM25 still searches the
// texts, and a query with a vector and no text is searched by its vector alone.

// DefaultMaxQueryVectorValues is the default cap on the values of all the query vectors of
// one /retrieve request: 2,560 queries (Search-R1's stock batch) of 4,096 values. The
// request body cap (MaxBodyBytes, 8 MiB by default) usually binds first: 2,560 vectors of
// 768 values written as JSON take about 20 MB, so a server that takes such batches needs a
// larger body cap.
const DefaultMaxQueryVectorValues = 2560 * 4096

// ErrTooManyVectorValues: the query vectors of a request hold more values than
// RetrieveOptions.MaxQueryVectorValues (answered 422, naming the cap).
var ErrTooManyVectorValues = errors.New("searchr1: query vectors over the value cap")

// errVectorUnserved: a request with query vectors to a server whose store has no dense
// index to search them in (no vectors, or its embedder not loaded).
var errVectorUnserved = errkind.New("searchr1: the store cannot search by vector", ErrInvalidRequest)

// The request fields of the extension.
const (
	fieldQueryVectors  = "query_vectors"
	fieldQueryEmbedder = "query_embedder"
)

// typeFloatType is pydantic's name of a value that is not a number.
const typeFloatType = "float_type"

// bodyQueryVectors reads the optional "query_vectors" field of a /retrieve body (nil when
// missing or null) and checks each vector: a list of finite numbers, not empty, not all
// zeros, all of one length, and all of them within MaxQueryVectorValues and MaxQueries.
func (h *retrieveHandler) bodyQueryVectors(raw map[string]json.RawMessage) ([][]float32, error) {
	v, ok := raw[fieldQueryVectors]
	if !ok || string(v) == "null" {
		return nil, nil
	}
	const notLists = `field "query_vectors" must be a list with one list of numbers per query (null for a query searched by its text)`
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, reqErr(typeListType, notLists, fieldQueryVectors)
	}
	if len(items) > h.o.MaxQueries {
		return nil, limitErr(ErrTooManyQueries, []any{fieldQueryVectors}, `field "query_vectors" has %d items, at most %d allowed (the server's max-queries limit)`, len(items), h.o.MaxQueries)
	}
	out := make([][]float32, len(items))
	total, first := 0, -1
	for i, it := range items {
		if string(it) == "null" {
			continue
		}
		var vec []float32
		if err := json.Unmarshal(it, &vec); err != nil || vec == nil {
			why := "a list of numbers"
			var ute *json.UnmarshalTypeError
			if errors.As(err, &ute) && strings.HasPrefix(ute.Value, "number ") { // "number 1e39": over float32
				why = "a list of numbers within float32's range"
			}
			return nil, reqErr(typeFloatType, fmt.Sprintf("query_vectors[%d] must be %s", i, why), fieldQueryVectors, i)
		}
		if bytes.Contains(it, []byte("null")) { // a null value reads as 0
			return nil, reqErr(typeFloatType, fmt.Sprintf("query_vectors[%d] holds null: each value must be a number", i), fieldQueryVectors, i)
		}
		switch {
		case len(vec) == 0:
			return nil, reqErr(typeValueError, fmt.Sprintf("query_vectors[%d] is empty: it must have the store's dimension", i), fieldQueryVectors, i)
		case first >= 0 && len(vec) != len(out[first]):
			return nil, reqErr(typeValueError, fmt.Sprintf("query_vectors[%d] has %d values, query_vectors[%d] has %d: every vector has the store's dimension",
				i, len(vec), first, len(out[first])), fieldQueryVectors, i)
		}
		if total += len(vec); total > h.o.MaxQueryVectorValues {
			return nil, limitErr(ErrTooManyVectorValues, []any{fieldQueryVectors}, "the query vectors hold more than %d values (the server's max-query-vector-values limit)", h.o.MaxQueryVectorValues)
		}
		zero := true
		for _, x := range vec {
			if x != 0 {
				zero = false
				break
			}
		}
		if zero {
			return nil, reqErr(typeValueError, fmt.Sprintf("query_vectors[%d] is all zeros: it has no direction to search", i), fieldQueryVectors, i)
		}
		if first < 0 {
			first = i
		}
		out[i] = vec
	}
	return out, nil
}

// decodeQueryVectors reads the extension's fields into req, whose queries are read
// already unless the body has none (then every query is its vector alone), and checks
// them against the queries: one vector per query, and with a reranker a text for every
// query (the cross-encoder scores passages against it).
func (h *retrieveHandler) decodeQueryVectors(raw map[string]json.RawMessage, req *retrieveRequest) error {
	vs, err := h.bodyQueryVectors(raw)
	if err != nil || vs == nil {
		return err
	}
	if e, ok := raw[fieldQueryEmbedder]; ok && string(e) != "null" {
		if err := json.Unmarshal(e, &req.QueryEmbedder); err != nil {
			return reqErr(typeStringType, `field "query_embedder" must be a string: the id of the embedder that made the query vectors`, fieldQueryEmbedder)
		}
	}
	if req.Queries == nil {
		req.Queries = make([]string, len(vs))
	}
	if len(vs) != len(req.Queries) {
		return reqErr(typeValueError, fmt.Sprintf(`field "query_vectors" has %d items for %d queries: one per query (null for a query searched by its text)`,
			len(vs), len(req.Queries)), fieldQueryVectors)
	}
	if h.o.Reranker != nil {
		for i, q := range req.Queries {
			if vs[i] != nil && strings.TrimSpace(q) == "" {
				return reqErr(typeValueError, fmt.Sprintf("queries[%d] is blank: a server with a reranker scores passages against each query's text, so a query vector needs its text too", i), "queries", i)
			}
		}
	}
	req.QueryVectors = vs
	return nil
}

// hasQueries reports whether a /retrieve body gives "queries" (not null).
func hasQueries(raw map[string]json.RawMessage) bool {
	q, ok := raw["queries"]
	return ok && string(q) != "null"
}

// SearchQueryVectors is [SearchQueries] with a vector per query: vectors[i], when not nil,
// is the embedding of queries[i], searched as it is (memory.WithQueryVector; for a
// [BatchSearcher] memory.WithQueryVectors) instead of an embedding of the text, which may
// then be blank. A query with neither text nor vector gets an empty list. vectors nil is
// SearchQueries; another length than queries' is an error (memory.ErrQueryVector).
func SearchQueryVectors(ctx context.Context, s Searcher, queries []string, vectors [][]float32, workers int, opts ...memory.SearchOption) ([][]memory.Result, error) {
	if vectors == nil {
		return SearchQueries(ctx, s, queries, workers, opts...)
	}
	if len(vectors) != len(queries) {
		return nil, fmt.Errorf("%w: %d query vectors for %d queries", memory.ErrQueryVector, len(vectors), len(queries))
	}
	return searchQueries(ctx, s, queries, vectors, workers, opts)
}

// vectorSearchError is err, the failure of a search of a request with query vectors:
// a store that cannot search by vector (memory.ErrNoEmbedder) is the request's problem
// (422), not the server's.
func vectorSearchError(err error, vectors bool) error {
	if err != nil && vectors && errors.Is(err, memory.ErrNoEmbedder) {
		return fmt.Errorf("%w: %w", errVectorUnserved, err)
	}
	return err
}
