package searchr1

import (
	"fmt"

	"github.com/agentmem/memory"
)

// CompatAnalyzer is the BM25 analyzer whose terms are pyserini's (Lucene 8's
// EnglishAnalyzer: its 33 stop words, Porter stemming): with it and Lucene's scoring
// ([StoreOptions]) a collection ranks and scores as the original's BM25 retriever.
const CompatAnalyzer = "en_lucene"

// CompatPassageMaxTokens is the token cap of a passage embedded for the original's dense
// index: search_r1/search/build_index.sh runs index_builder.py with --max_length 256
// (its own default, 180, is not what built e5_Flat.index).
const CompatPassageMaxTokens = 256

// StoreOptions returns the options to open a store with that serves, or is indexed for,
// dialect c. For [CompatSearchR1]:
//
//   - memory.WithBM25Scoring(memory.ScoringLucene): BM25 as pyserini computes it (Lucene
//     8's BM25Similarity: k1 0.9, b 0.4, no (k1 + 1) factor, document lengths as Lucene's
//     one-byte norms keep them, float32), so raw scores are the original's; the terms
//     are the collection's analyzer's (see [AnalyzerWarning]);
//   - memory.WithChunking with Disabled: a corpus row is stored as one passage, so a
//     search returns whole rows, as the original does.
//
// For [CompatNative] it returns none. Give an explicit memory.WithBM25Scoring after these
// to choose another formula.
func StoreOptions(c Compat) []memory.Option {
	if c != CompatSearchR1 {
		return nil
	}
	return []memory.Option{
		memory.WithBM25Scoring(memory.ScoringLucene),
		memory.WithChunking(memory.ChunkOptions{Disabled: true}),
	}
}

// AnalyzerWarning returns, for a collection with BM25 analyzer analyzer served in dialect
// c, a one-line warning when its terms are not pyserini's (the analyzer is not
// [CompatAnalyzer]), naming the ways to fix it; "" when there is nothing to warn of.
// collection names the collection in the advice ("" or "default": the default one).
func AnalyzerWarning(c Compat, analyzer, collection string) string {
	if c != CompatSearchR1 || analyzer == CompatAnalyzer {
		return ""
	}
	if collection == "" {
		collection = memory.DefaultCollection
	}
	return fmt.Sprintf("BM25 terms differ from pyserini's: collection %q has the %q analyzer, not %q (Lucene's EnglishAnalyzer), so rankings and scores can differ from the original's; "+
		"index a new store with `memory index --analyzer %s` (or --compat search-r1), or rebuild this collection's BM25 index with `memory collections --set-analyzer %s %s`",
		collection, analyzer, CompatAnalyzer, CompatAnalyzer, collection, CompatAnalyzer)
}

// CorpusDocument is how a row of a Search-R1 or pyserini corpus ({"id": ..., "contents":
// ...}) is stored to be served in the [CompatSearchR1] dialect (memory index --compat
// search-r1 stores rows so): the contents, byte for byte, as the text, and no title. Then
//
//   - [Contents] gives the row's contents back verbatim, whatever its first line is (a
//     title split off and put back in quotes would not: a first line without quotes, a
//     row of one line, an empty quoted title or a "\r\n" line end come back changed);
//   - BM25 indexes the whole contents as one field, as pyserini indexes its "contents";
//   - an embedder sees the contents as the original's index builder embeds them (with
//     the E5 preset, "passage: " + contents, the quoted title included).
func CorpusDocument(id, contents string) memory.Document {
	return memory.Document{ID: id, Text: contents}
}
