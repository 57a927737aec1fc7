package searchr1

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/parallel"
)

// rerankRequest is the body of POST /rerank, in the layout of Search-R1's reranker server
// (search_r1/search/reranker_server.py), for trainers that retrieve elsewhere:
//
//	{"queries": ["q1", "q2"], "documents": [[doc, ...], [doc, ...]], "rerank_topk": 3, "return_scores": true}
//
// documents[i] are the passages of queries[i]. A doc is what /retrieve returns: a
// {"id": ..., "contents": "\"Title\"\ntext"} object, the same wrapped as
// {"document": {...}, "score": ...}, or a bare contents string. rerank_topk defaults to
// the server's default topk. The answer has /retrieve's layout, best passage first, with
// sigmoid(logit) as the score. In the [CompatSearchR1] dialect the answer is the original
// rerank server's instead (see there).
type rerankRequest struct {
	Queries      []string         `json:"queries"`
	Documents    [][]retrievedDoc `json:"documents"`
	RerankTopK   *int             `json:"rerank_topk"`
	ReturnScores bool             `json:"return_scores"`
}

// parseDoc reads one /rerank document.
func parseDoc(raw json.RawMessage) (retrievedDoc, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return retrievedDoc{Contents: s}, nil
	}
	var obj struct {
		ID       *json.RawMessage `json:"id"`
		Contents *string          `json:"contents"`
		Document *struct {
			ID       *json.RawMessage `json:"id"`
			Contents *string          `json:"contents"`
		} `json:"document"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return retrievedDoc{}, errors.New(`must be an object with "contents" or a string`)
	}
	id, contents := obj.ID, obj.Contents
	if obj.Document != nil {
		id, contents = obj.Document.ID, obj.Document.Contents
	}
	if contents == nil {
		return retrievedDoc{}, errors.New(`has no "contents" string`)
	}
	d := retrievedDoc{Contents: *contents}
	if id != nil {
		var sid string
		if err := json.Unmarshal(*id, &sid); err == nil {
			d.ID = sid
		} else if string(*id) != "null" {
			d.ID = string(*id) // a number: keep its JSON text
		}
	}
	return d, nil
}

// splitContents splits Search-R1 "contents" into title and text: the first line is the
// title, in double quotes that are dropped; a one-line contents is all text.
func splitContents(c string) (title, text string) {
	first, rest, ok := strings.Cut(c, "\n")
	if !ok {
		return "", c
	}
	if len(first) >= 2 && first[0] == '"' && first[len(first)-1] == '"' {
		first = first[1 : len(first)-1]
	}
	return first, rest
}

// decodeRerank reads and validates a /rerank body.
func (h *retrieveHandler) decodeRerank(w http.ResponseWriter, r *http.Request) (rerankRequest, int, error) {
	var req rerankRequest
	raw, status, err := readObject(w, r, h.o.MaxRerankBodyBytes)
	if err != nil {
		return req, status, err
	}
	if req.Queries, err = h.bodyQueries(raw); err != nil {
		return req, http.StatusUnprocessableEntity, err
	}
	d, ok := raw["documents"]
	switch {
	case !ok:
		return req, http.StatusUnprocessableEntity, reqErr(typeMissing, `field "documents" is required`, "documents")
	case string(d) == "null":
		return req, http.StatusUnprocessableEntity, reqErr(typeListType, `field "documents" is required`, "documents")
	}
	var docs [][]json.RawMessage
	if err := json.Unmarshal(d, &docs); err != nil {
		return req, http.StatusUnprocessableEntity, reqErr(typeListType, `field "documents" must be a list of lists of documents`, "documents")
	}
	if len(docs) != len(req.Queries) {
		return req, http.StatusUnprocessableEntity, reqErr(typeValueError,
			fmt.Sprintf(`field "documents" has %d lists for %d queries`, len(docs), len(req.Queries)), "documents")
	}
	pairs := 0
	for _, l := range docs {
		pairs += len(l)
	}
	if pairs > h.o.MaxRerankPairs {
		return req, http.StatusUnprocessableEntity, limitErr(ErrTooManyQueries, []any{"documents"},
			`%d (query, passage) pairs, at most %d allowed (the server's max rerank pairs)`, pairs, h.o.MaxRerankPairs)
	}
	req.Documents = make([][]retrievedDoc, len(docs))
	for i, l := range docs {
		req.Documents[i] = make([]retrievedDoc, len(l))
		for j, rd := range l {
			doc, err := parseDoc(rd)
			if err != nil {
				return req, http.StatusUnprocessableEntity, reqErr(typeValueError, fmt.Sprintf("documents[%d][%d] %v", i, j, err), "documents", i, j)
			}
			req.Documents[i][j] = doc
		}
	}
	if t, ok := raw["rerank_topk"]; ok && string(t) != "null" {
		k, err := intField("rerank_topk", t)
		if err != nil {
			return req, http.StatusUnprocessableEntity, err
		}
		switch {
		case k == 0 && h.o.Compat == CompatSearchR1:
			// The original's "if not request.rerank_topk": 0 is the server's default.
		case k < 1:
			return req, http.StatusUnprocessableEntity, reqErr(typeValueError, fmt.Sprintf(`field "rerank_topk" is %d, must be at least 1`, k), "rerank_topk")
		default:
			req.RerankTopK = &k
		}
	}
	if req.ReturnScores, err = returnScores(raw); err != nil {
		return req, http.StatusUnprocessableEntity, err
	}
	return req, 0, nil
}

func (h *retrieveHandler) rerank(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	if h.o.Reranker == nil {
		writeError(w, http.StatusNotImplemented, ErrNoReranker.Error()+": start the server with a reranker (serve --reranker)")
		return
	}
	req, status, err := h.decodeRerank(w, r)
	if err != nil {
		h.fail(w, status, err)
		return
	}
	topK := h.o.DefaultTopK
	if req.RerankTopK != nil {
		topK = *req.RerankTopK
	}
	h.obs.Batch(endpointOf(r.URL.Path), len(req.Queries))
	if !h.acquire(w, r) {
		return
	}
	defer h.release()

	// The documents are already in memory; they are reranked chunk by chunk like
	// /retrieve's results, and returned with their contents as given.
	search := func(ctx context.Context, base int, qs []string) ([][]memory.Result, error) {
		out := make([][]memory.Result, len(qs))
		err := parallel.For(ctx, len(qs), h.o.Workers, func(ctx context.Context, i int) error {
			docs := req.Documents[base+i]
			if len(docs) == 0 {
				return nil
			}
			res := make([]memory.Result, len(docs))
			texts := make([]string, len(docs))
			for j, d := range docs {
				res[j] = memory.Result{ID: d.ID, Text: d.Contents}
				if h.o.Compat == CompatSearchR1 {
					texts[j] = PassageString(d.Contents)
				} else {
					texts[j] = rerankText(splitContents(d.Contents))
				}
			}
			ranked, err := h.rerankResults(ctx, w, qs[i], res, texts)
			if err != nil {
				return fmt.Errorf("queries[%d]: %w", base+i, err)
			}
			out[i] = ranked
			return nil
		})
		return out, err
	}
	h.stream(w, r, req.Queries, h.chunkSize(1), search, func(buf []byte, res []memory.Result) []byte {
		if len(res) > topK {
			res = res[:topK]
		}
		if h.o.Compat == CompatSearchR1 {
			// rerank_server's answer: the string the cross-encoder scored, its raw logit.
			return appendCompatList(buf, res, req.ReturnScores, func(r memory.Result) any {
				return PassageString(capBytes(r.Text, h.o.MaxPassageBytes))
			}, rawScore)
		}
		return h.appendList(buf, res, req.ReturnScores)
	})
}
