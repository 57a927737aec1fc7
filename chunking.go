package memory

import (
	"path"
	"strings"

	"github.com/agentmem/memory/chunker"
	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/internal/store"
)

// ChunkOptions configure how documents are split into chunks when they are added. The zero
// value chunks with the defaults.
type ChunkOptions struct {
	// Budget is the largest prose chunk, in non-whitespace characters (default
	// chunker.DefaultTextBudget, 1000, about 250 to 300 tokens of English; lowered to
	// fit the window of an embedder that reports MaxLength()). A text within the budget
	// stays one chunk.
	Budget int
	// CodeBudget is the largest code chunk, in non-whitespace characters (default
	// chunker.DefaultBudget, 1500, as [Collection.AddCode] uses). Code is split only when
	// it is a fifth over it, so AddCode's chunks (the budget plus a short header) stay whole.
	CodeBudget int
	// Disabled stores every document as one chunk, however long.
	Disabled bool
}

// maxLengther is implemented by embedders that truncate input at a number of tokens
// (vectorstore.ONNXEmbedder).
type maxLengther interface{ MaxLength() int }

// chunkBudgets returns the prose and code budgets in effect.
func (dw docWrites) chunkBudgets() (prose, code int) {
	m := dw.m
	c := m.opts.Chunking
	prose, code = c.Budget, c.CodeBudget
	if prose <= 0 {
		prose = chunker.DefaultTextBudget
		if ml, ok := m.opts.Embedder.(maxLengther); ok && ml.MaxLength() > 0 {
			// About 3 non-whitespace characters per word piece of English, [CLS] and
			// [SEP] excluded.
			prose = min(prose, max(200, (ml.MaxLength()-2)*3))
		}
	}
	if code <= 0 {
		code = chunker.DefaultBudget
	}
	return prose, code
}

// codeLanguage returns the chunker language of a code document ("" for prose): the
// metadata key "language" when set, else the extension of the source.
func codeLanguage(d *Document) string {
	lang, _ := d.Metadata["language"].(string)
	if lang == "" {
		lang = chunker.LanguageOf(path.Base(d.Source))
	}
	switch strings.ToLower(lang) {
	case "", "text", "txt", "markdown", "md":
		return ""
	}
	return lang
}

// chunkDoc returns the chunks of a document, nil when it stays one chunk.
func (dw docWrites) chunkDoc(d *Document) []store.Chunk {
	m := dw.m
	if m.opts.Chunking.Disabled || d.Embedding != nil {
		return nil
	}
	prose, code := dw.chunkBudgets()
	if len(d.Text) <= prose {
		return nil // non-whitespace characters <= bytes
	}
	size := nonSpace(d.Text)
	var chunks []chunker.Chunk
	lang := codeLanguage(d)
	if lang == "" && size <= prose {
		return nil
	}
	if lang != "" {
		// A code chunk from AddCode carries a header of a few lines over its budget:
		// allow a fifth more before splitting code again.
		if size <= code+code/5 {
			return nil
		}
		name := d.Source
		if name == "" {
			name = d.ID
		}
		cs, err := chunker.Code(name, []byte(d.Text), chunker.CodeOptions{Budget: code, Language: lang})
		if err == nil {
			chunks = cs
		} else {
			m.log.Debug("memory: code chunking failed, chunking as prose", "id", d.ID, "err", err)
		}
	}
	if chunks == nil {
		chunks = chunker.Text(d.Text, chunker.TextOptions{Budget: prose})
	}
	out := make([]store.Chunk, 0, len(chunks))
	for _, c := range chunks {
		if c.Size == 0 {
			continue // whitespace only
		}
		h := c.Headings
		if h == nil && c.QualifiedName != "" {
			h = []string{c.QualifiedName}
		}
		out = append(out, store.Chunk{S: c.StartByte, E: c.EndByte, H: h})
	}
	if len(out) <= 1 {
		return nil
	}
	return out
}

// nonSpace counts the characters of s that are not ASCII whitespace, as chunker budgets do.
func nonSpace(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' && b != '\v' && b != '\f' && b&0xC0 != 0x80 {
			n++
		}
	}
	return n
}

// unitEmbedText is what the embedder sees of chunk i of r: title, heading path, chunk text.
func unitEmbedText(r *store.Record, i int) string {
	text, _, _, h := r.UnitText(i)
	if len(h) > 0 {
		text = strings.Join(h, " > ") + "\n" + text
	}
	return embedText(r.Title, text)
}

// recordSource is a stored document's Source (its metadata "source" string).
func recordSource(r *store.Record) string {
	s, _ := r.Metadata[sourceKey].(string)
	return s
}

// bm25Doc is the keyword index's view of chunk i (-1: all) of record r, index id uid.
func bm25Doc(uid string, r *store.Record, i int) bm25.Doc {
	text, _, _, h := r.UnitText(i)
	if len(h) > 0 && i >= 0 {
		// The heading path is searchable with its chunk.
		text = strings.Join(h, " ") + "\n" + text
	}
	// Every unit carries its document's metadata (Where filters run in the index); the
	// whole document or its first chunk stands for the document when filters count.
	return bm25.Doc{ID: uid, Title: r.Title, Text: text, Meta: r.Metadata, Chunk: max(i, 0)}
}

// collapseList keeps the best-ranked chunk of each document in a ranked list of index ids
// and renames its hits to the document ids; best records which chunk each kept.
func collapseList(hits []hybrid.Hit, best map[string]string) []hybrid.Hit {
	out := hits[:0:0]
	for _, h := range hits {
		parent, _ := store.SplitUnit(h.ID)
		if _, seen := best[parent]; seen {
			continue
		}
		best[parent] = h.ID
		out = append(out, hybrid.Hit{ID: parent, Score: h.Score})
	}
	return out
}

// searchUnits runs a retriever for the best k documents over a collection whose documents
// may have several chunks: it asks for k chunks and, while the chunks returned name fewer
// than k documents and more could exist, asks again for more. It returns the list
// collapsed to the best chunk per document (or, with all, the chunks as they came).
func searchUnits(k, units int, all bool, best map[string]string, run func(k int) ([]hybrid.Hit, error)) ([]hybrid.Hit, error) {
	ask := k
	for {
		hits, err := run(ask)
		if err != nil {
			return nil, err
		}
		if all {
			return hits, nil
		}
		clear(best)
		out := collapseList(hits, best)
		if len(out) >= k || len(hits) < ask || ask >= units {
			return out, nil
		}
		ask = min(ask*4, units)
	}
}

// bestUnit picks the chunk that stands for a fused document: the best chunk of the
// retriever that added most to its fused score (the first in the table on a tie). best
// holds each retriever's best unit per document.
func bestUnit(f hybrid.Fused, best map[string]map[string]string) string {
	uid, top := "", 0.0
	for _, c := range f.Contributions {
		if c.Rank == 0 {
			continue
		}
		if u := best[c.List][f.ID]; u != "" && (uid == "" || c.Value > top) {
			uid, top = u, c.Value
		}
	}
	if uid == "" {
		return f.ID
	}
	return uid
}

// chunkResult makes the Result of chunk ci (-1: the whole document) of document parent.
func chunkResult(col, parent, uid string, r *store.Record, ci int, score float64, ex Explanation) Result {
	var text string
	var start, end int
	var h []string
	if ci >= 0 && ci < len(r.Chunks) && r.Chunks[ci].E > len(r.Text) {
		// A record read without its text (WithoutText): the chunk's place, no text.
		c := r.Chunks[ci]
		start, end, h = c.S, c.E, c.H
	} else {
		text, start, end, h = r.UnitText(ci)
	}
	return Result{
		ID: parent, Collection: col, Title: r.Title, Text: text, Metadata: cloneMeta(r.Metadata),
		Source: recordSource(r), ChunkIndex: max(ci, 0), Chunks: max(1, len(r.Chunks)),
		Start: start, End: end, Headings: h,
		Score: score, Explain: ex, unit: uid,
	}
}
