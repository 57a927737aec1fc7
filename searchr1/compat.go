package searchr1

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/parallel"
)

// Compat names the dialect the retrieval server of [NewRetrieveHandler] speaks.
type Compat string

const (
	// CompatNative is this package's own dialect (the zero value): one /retrieve request
	// shape ({"queries", "topk", "return_scores"}), documents as {"id", "contents"}
	// objects, the score of the store's search (RRF in the default hybrid mode, sigmoid of
	// the logit when reranked), "topk" 0 refused with 422, and /rerank answering
	// /retrieve's layout.
	CompatNative Compat = ""
	// CompatSearchR1 answers as the original Search-R1 servers
	// (search_r1/search/retrieval_server.py, retrieval_rerank_server.py and
	// rerank_server.py) do:
	//
	//   - /retrieve without a Reranker is retrieval_server's: "topk" 0, null or missing is
	//     the server's default (DefaultTopK); a BM25 search returns each document as
	//     {"title", "text", "contents"} (title: the first line of contents with its
	//     surrounding quotes stripped, as Python's strip('"') does; text: the lines after
	//     it), any other search as {"id", "contents"}; the score is the search's own (set
	//     the search mode to BM25 or Dense in SearchOptions: a BM25 score or an inner
	//     product; a hybrid search's score is a fusion score the original never reports).
	//     "topk_retrieval" or "topk_rerank" in such a request get 422: they need a
	//     Reranker.
	//   - /retrieve with a Reranker is retrieval_rerank_server's combined request:
	//     {"queries", "topk_retrieval", "topk_rerank", "return_scores"}. topk_retrieval
	//     (missing, null or 0: RerankDepth, 10 by default in this dialect) candidates are
	//     retrieved per query and reranked; the best topk_rerank (missing: DefaultTopK;
	//     null: all of them; 0: none) are returned; "topk" is ignored, as there. Each
	//     "document" is a string: the original's convert_title_format of the
	//     "(Title: t) text" string the cross-encoder scored, which is "\"t\"\ntext" with t
	//     the contents' first line, quotes included (a quoted title comes back in doubled
	//     quotes, ""t"", exactly as the original writes it).
	//   - /rerank is rerank_server's: {"queries", "documents", "rerank_topk",
	//     "return_scores"}, rerank_topk 0, null or missing is DefaultTopK, and each
	//     "document" is the "(Title: t) text" string the cross-encoder scored.
	//   - Reranked scores are the cross-encoder's raw logits (what sentence-transformers'
	//     CrossEncoder.predict returns for the ms-marco cross-encoders, whose activation is
	//     Identity), not sigmoid(logit).
	//   - Scores are written as Python writes floats (9.0, not 9; 1e-05), and text is not
	//     HTML-escaped, as FastAPI's JSON responses.
	//   - "contents" is [Contents] of the hit: a corpus row stored as [CorpusDocument]
	//     stores it (memory index --compat search-r1) comes back byte for byte, and a hit
	//     that is one chunk of a longer document is replaced by the whole document, so a
	//     result is never a part of a row.
	//   - BM25 scores are the store's: open it with [StoreOptions] (memory serve --compat
	//     search-r1 does) for pyserini's formula, and give the collection the
	//     [CompatAnalyzer] for its terms (see [AnalyzerWarning]).
	//   - "topk" may be up to MaxTopK ([DefaultCompatMaxTopK] by default; the original
	//     takes any), within the response budget.
	//   - A bad request gets 422 with FastAPI's validation error body,
	//     {"detail": [{"type": ..., "loc": ["body", field, ...], "msg": ...}]}, malformed
	//     JSON included (type "json_invalid"); see [RequestError].
	//
	// Two things differ on purpose: the original reranker pairs every query with the
	// documents of every query of a request (a bug that only a one-query request does not
	// show), here each query is reranked against its own documents; and a query without
	// documents gets an empty list, where the original leaves it out of "result" and so
	// shifts the lists of the queries after it.
	CompatSearchR1 Compat = "search-r1"
)

// DefaultCompatRetrievalTopK is the topk_retrieval of a combined retrieve-and-rerank
// request that gives none, in the [CompatSearchR1] dialect (the original's default).
const DefaultCompatRetrievalTopK = 10

// ParseCompat reads a dialect name: "" or "native" for [CompatNative], "search-r1" (also
// "searchr1") for [CompatSearchR1].
func ParseCompat(s string) (Compat, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "native":
		return CompatNative, nil
	case "search-r1", "searchr1":
		return CompatSearchR1, nil
	}
	return "", fmt.Errorf("%w %q (want native or search-r1)", errUnknownCompat, s)
}

// bm25Doc is a BM25 hit of the original retrieval server, in its key order.
type bm25Doc struct {
	Title    string `json:"title"`
	Text     string `json:"text"`
	Contents string `json:"contents"`
}

// splitFirstLine splits contents as Python's content.split("\n")[0] and
// "\n".join(content.split("\n")[1:]) do.
func splitFirstLine(contents string) (first, rest string) {
	first, rest, _ = strings.Cut(contents, "\n")
	return first, rest
}

// PassageString is the text the original rerank server gives its cross-encoder for a
// document of the given contents: "(Title: " + the first line (quotes kept) + ") " + the
// lines after it.
func PassageString(contents string) string {
	first, rest := splitFirstLine(contents)
	return "(Title: " + first + ") " + rest
}

// convertTitleFormat is the original retrieve-and-rerank server's convert_title_format:
// a string matching the pattern \(Title:\s*([^)]+)\)\s*(.+) (dot matching newlines) from
// its start becomes "\"" + group 1 + "\"\n" + group 2; any other string is returned as it
// is. Whitespace is Python's (str.isspace).
func convertTitleFormat(s string) string {
	const head = "(Title:"
	if !strings.HasPrefix(s, head) {
		return s
	}
	rest := s[len(head):]
	// \s* then [^)]+ then \): the title runs from after the whitespace to the first ')';
	// when the whitespace reaches the ')' directly, its last character is the title.
	close := strings.IndexByte(rest, ')')
	if close < 0 {
		return s
	}
	ws := pySpacePrefix(rest[:close])
	if ws == close {
		if ws == 0 {
			return s // "(Title:)" : [^)]+ has nothing to match
		}
		ws = lastRuneStart(rest[:close])
	}
	title := rest[ws:close]
	tail := rest[close+1:]
	// \s*(.+): the text is what follows the whitespace; when nothing does, the last
	// whitespace character is the text.
	n := pySpacePrefix(tail)
	if n == len(tail) {
		if n == 0 {
			return s // nothing after ')': .+ cannot match
		}
		n = lastRuneStart(tail)
	}
	return `"` + title + `"` + "\n" + tail[n:]
}

// pySpacePrefix is the byte length of the run of Python whitespace that starts s.
func pySpacePrefix(s string) int {
	for i, r := range s {
		if !isPySpace(r) {
			return i
		}
	}
	return len(s)
}

// lastRuneStart is the byte offset of the last rune of the non-empty s.
func lastRuneStart(s string) int {
	for i := len(s) - 1; i > 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return i
		}
	}
	return 0
}

// appendPyFloat appends f as Python's repr writes a float (json.dumps uses it): the
// shortest digits that read back as f, in positional notation with at least one
// fractional digit ("9.0") when 1e-4 <= |f| < 1e16, else in exponent notation with a
// signed exponent of at least two digits ("1e-05", "1.5e+16").
func appendPyFloat(buf []byte, f float64) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(buf, "-0.0"...)
		}
		return append(buf, "0.0"...)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±dd
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	mant, expStr, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	if neg {
		buf = append(buf, '-')
	}
	if exp < -4 || exp >= 16 {
		buf = append(buf, mant...)
		buf = append(buf, 'e')
		if exp < 0 {
			buf = append(buf, '-')
			exp = -exp
		} else {
			buf = append(buf, '+')
		}
		if exp < 10 {
			buf = append(buf, '0')
		}
		return strconv.AppendInt(buf, int64(exp), 10)
	}
	if exp < 0 {
		buf = append(buf, "0."...)
		buf = append(buf, strings.Repeat("0", -exp-1)...)
		return append(buf, digits...)
	}
	if len(digits) <= exp+1 {
		buf = append(buf, digits...)
		buf = append(buf, strings.Repeat("0", exp+1-len(digits))...)
		return append(buf, ".0"...)
	}
	buf = append(buf, digits[:exp+1]...)
	buf = append(buf, '.')
	return append(buf, digits[exp+1:]...)
}

// plainJSON encodes values without HTML escaping (as FastAPI writes them).
type plainJSON struct {
	b   bytes.Buffer
	enc *json.Encoder
}

func newPlainJSON() *plainJSON {
	p := &plainJSON{}
	p.enc = json.NewEncoder(&p.b)
	p.enc.SetEscapeHTML(false)
	return p
}

// append appends the JSON of v to buf.
func (p *plainJSON) append(buf []byte, v any) ([]byte, error) {
	p.b.Reset()
	if err := p.enc.Encode(v); err != nil {
		return buf, err
	}
	return append(buf, bytes.TrimSuffix(p.b.Bytes(), []byte("\n"))...), nil
}

// appendCompatList appends one query's list in the original servers' layout: doc(r) is
// each result's "document", score(r) its score (used when scores is true). A list with a
// non-finite score, which the original cannot write either, is written empty.
func appendCompatList(buf []byte, res []memory.Result, scores bool, doc func(memory.Result) any, score func(memory.Result) float64) []byte {
	start := len(buf)
	enc := newPlainJSON()
	buf = append(buf, '[')
	for j, r := range res {
		if j > 0 {
			buf = append(buf, ',')
		}
		if scores {
			buf = append(buf, `{"document":`...)
		}
		var err error
		if buf, err = enc.append(buf, doc(r)); err != nil {
			return append(buf[:start], "[]"...)
		}
		if scores {
			s := score(r)
			if math.IsNaN(s) || math.IsInf(s, 0) {
				return append(buf[:start], "[]"...)
			}
			buf = append(buf, `,"score":`...)
			buf = appendPyFloat(buf, s)
			buf = append(buf, '}')
		}
	}
	return append(buf, ']')
}

// retrievedDocCompat is a hit of the original retrieval server: {"title", "text",
// "contents"} from a BM25 search, {"id", "contents"} otherwise.
func (h *retrieveHandler) retrievedDocCompat(r memory.Result) any {
	contents := capBytes(Contents(r), h.o.MaxPassageBytes)
	if r.Explain.Mode == memory.BM25 {
		first, rest := splitFirstLine(contents)
		return bm25Doc{Title: strings.Trim(first, `"`), Text: rest, Contents: contents}
	}
	return retrievedDoc{ID: r.ID, Contents: contents}
}

// rawScore is a result's score as the original reports it: the cross-encoder's logit
// when reranked, else the search's own score.
func rawScore(r memory.Result) float64 {
	if r.Explain.Rerank != nil {
		return r.Explain.Rerank.Logit
	}
	return r.Score
}

// searchRequestCompat is the original retrieve-and-rerank server's request, its sizes
// resolved: depth candidates are retrieved per query and keep of them returned.
type searchRequestCompat struct {
	queries      []string
	depth, keep  int
	returnScores bool
}

// decodeSearchCompat reads a retrieve-and-rerank request ({"queries", "topk_retrieval",
// "topk_rerank", "return_scores"}); the HTTP status of a failure comes with it.
func (h *retrieveHandler) decodeSearchCompat(w http.ResponseWriter, r *http.Request) (searchRequestCompat, int, error) {
	var req searchRequestCompat
	raw, status, err := readObject(w, r, h.o.MaxBodyBytes)
	if err != nil {
		return req, status, err
	}
	if req.queries, err = h.bodyQueries(raw); err != nil {
		return req, http.StatusUnprocessableEntity, err
	}
	// The original retrieve-and-rerank server reranks texts: a query vector has no place
	// in it, and ignoring one would answer another question than the caller asked.
	for _, f := range []string{"query_vectors", "query_embedder"} {
		if v, ok := raw[f]; ok && string(v) != "null" {
			return req, http.StatusUnprocessableEntity, reqErr(typeValueError, fmt.Sprintf("field %q is not taken by the retrieve-and-rerank server (it reranks query texts)", f), f)
		}
	}
	// optInt reads an optional integer field: present is false when it is missing, null
	// when it is null.
	optInt := func(name string) (k int, present, null bool, err error) {
		v, ok := raw[name]
		switch {
		case !ok:
			return 0, false, false, nil
		case string(v) == "null":
			return 0, true, true, nil
		}
		k, err = intField(name, v)
		if err != nil {
			return 0, true, false, err
		}
		if k < 0 {
			return 0, true, false, reqErr(typeValueError, fmt.Sprintf("field %q is %d, must not be negative", name, k), name)
		}
		return k, true, false, nil
	}
	maxDepth := max(h.o.MaxTopK, h.o.RerankDepth)
	k, _, _, err := optInt("topk_retrieval")
	switch {
	case err != nil:
		return req, http.StatusUnprocessableEntity, err
	case k == 0: // missing, null or 0: the server's retrieval depth
		req.depth = h.o.RerankDepth
	case k > maxDepth:
		return req, http.StatusUnprocessableEntity, reqErr(typeValueError, fmt.Sprintf(`field "topk_retrieval" is %d, must be at most %d`, k, maxDepth), "topk_retrieval")
	default:
		req.depth = k
	}
	k, present, null, err := optInt("topk_rerank")
	switch {
	case err != nil:
		return req, http.StatusUnprocessableEntity, err
	case !present:
		req.keep = h.o.DefaultTopK
	case null: // doc_scores[:None]: every candidate
		req.keep = req.depth
	default:
		req.keep = k
	}
	req.keep = min(req.keep, req.depth)
	if req.returnScores, err = returnScores(raw); err != nil {
		return req, http.StatusUnprocessableEntity, err
	}
	return req, 0, nil
}

// retrieveRerankCompat answers /retrieve as the original retrieve-and-rerank server
// (see [CompatSearchR1]).
func (h *retrieveHandler) retrieveRerankCompat(w http.ResponseWriter, r *http.Request) {
	req, status, err := h.decodeSearchCompat(w, r)
	if err != nil {
		h.fail(w, status, err)
		return
	}
	if need := int64(len(req.queries)) * int64(req.keep) * int64(h.o.MaxPassageBytes); need > h.o.MaxResponseBytes {
		setKind(w, kindOverBudget)
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"%v: %d queries x topk_rerank %d x %d passage bytes = %d bytes, over the response budget of %d bytes; send fewer queries or a smaller topk_rerank",
			ErrOverBudget, len(req.queries), req.keep, h.o.MaxPassageBytes, need, h.o.MaxResponseBytes))
		return
	}
	h.obs.Batch(endpointOf(r.URL.Path), len(req.queries))
	if !h.acquire(w, r) {
		return
	}
	defer h.release()

	opts := append(append([]memory.SearchOption(nil), h.o.SearchOptions...), memory.TopK(req.depth))
	search := func(ctx context.Context, _ int, qs []string) ([][]memory.Result, error) {
		t := time.Now()
		hits, err := SearchQueries(ctx, h.s, qs, h.o.Workers, opts...)
		h.timeStage(w, "search", t)
		if err == nil {
			err = h.wholeRows(ctx, hits)
		}
		if err != nil {
			return nil, err
		}
		err = parallel.For(ctx, len(qs), h.o.Workers, func(ctx context.Context, i int) error {
			if len(hits[i]) == 0 {
				return nil
			}
			texts := make([]string, len(hits[i]))
			for j, r := range hits[i] {
				texts[j] = PassageString(Contents(r))
			}
			var err error
			hits[i], err = h.rerankResults(ctx, w, qs[i], hits[i], texts)
			return err
		})
		return hits, err
	}
	h.stream(w, r, req.queries, h.chunkSize(req.depth), search, func(buf []byte, res []memory.Result) []byte {
		if len(res) > req.keep {
			res = res[:req.keep]
		}
		return appendCompatList(buf, res, req.returnScores, func(r memory.Result) any {
			return convertTitleFormat(PassageString(capBytes(Contents(r), h.o.MaxPassageBytes)))
		}, rawScore)
	})
}

// documentGetter reads a stored document by id (*memory.Collection does).
type documentGetter interface {
	Get(ctx context.Context, id string) (memory.Document, error)
}

// wholeRows replaces, in the [CompatSearchR1] dialect, every hit that is one chunk of a
// longer document (Chunks > 1) by the whole document, read from the store: the original
// servers return whole corpus rows, never a part of one. A store indexed for Search-R1
// (memory index --compat search-r1, or chunking disabled) has no chunks, and this costs
// nothing. A searcher that cannot read documents (neither a *memory.Memory nor a
// documentGetter) keeps its chunks, and the server logs it once.
func (h *retrieveHandler) wholeRows(ctx context.Context, hits [][]memory.Result) error {
	for i := range hits {
		for j := range hits[i] {
			r := &hits[i][j]
			if r.Chunks <= 1 {
				continue
			}
			var (
				d   memory.Document
				err error
			)
			switch s := h.s.(type) {
			case *memory.Memory:
				d, err = s.Collection(r.Collection).Get(ctx, r.ID)
			case documentGetter:
				d, err = s.Get(ctx, r.ID)
			default:
				h.chunkWarn.Do(func() {
					h.log.Warn("searchr1: /retrieve returns a chunk of a document, not the whole corpus row: the searcher cannot read documents by id; index the corpus without chunking (memory index --compat search-r1)", "id", r.ID)
				})
				continue
			}
			if err != nil {
				return fmt.Errorf("reading document %q, of which a chunk was found: %w", r.ID, err)
			}
			r.Title, r.Text = d.Title, d.Text
			r.ChunkIndex, r.Chunks, r.Start, r.End = 0, 1, 0, len(d.Text)
		}
	}
	return nil
}
