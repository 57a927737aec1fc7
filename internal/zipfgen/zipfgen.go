// Package zipfgen writes deterministic synthetic corpora in BEIR layout whose word
// statistics follow the laws of real text, for held-out BM25 benchmarks at the sizes users
// run (1M and 21M passages): a vocabulary that keeps growing with the corpus (Heaps' law),
// Zipf–Mandelbrot word frequencies, a long tail of rare terms, and topics, so that queries
// have relevant passages. It complements internal/corpusgen, whose passages recombine
// SciFact sentences and so stop adding terms after SciFact's vocabulary: an index built
// from it at 21M passages has a term dictionary and posting-list shape no real corpus of that
// size has, and its queries are SciFact's own, which tuning can overfit.
//
// # Calibration
//
// Heaps' law V(n) = K·n^β with K = 40, β = 0.55 (n tokens, V distinct terms). It is
// anchored on the published figures of the 21M-passage Wikipedia that the benchmarks
// mirror: Pyserini's prebuilt Lucene index "wikipedia-dpr" (DPR's 100-word passages of the
// December 2018 English Wikipedia; Lucene English analyzer, which like this module's
// default analyzer lower-cases, drops stop words and Porter-stems) lists 21,015,324
// documents, 1,512,973,270 terms after stop words (about 2.10 billion tokens before: 100
// words a passage) and 5,345,463 unique terms. β = 0.55 is in the range reported for
// English text (0.4 to 0.6; Manning, Raghavan and Schütze, Introduction to Information
// Retrieval, §5.1.1: Reuters-RCV1 K = 44, β = 0.49, typical K 30 to 100), and with it the
// anchor gives K = 5,345,463 / (2.10e9)^0.55 ≈ 40, in the book's typical range too. The
// same curve gives 1.5M terms at 2.1e8 tokens, between the Wikipedia-derived BEIR
// corpora of that size in the same catalogue (NQ: 997,027 terms at 151M non-stop terms;
// HotpotQA: 2,644,892 at 172M; DBPedia-entity: 3,351,459 at 165M). At 2.2 billion tokens
// it gives 5.5M terms; passages of 760 bytes average 138 tokens here, so 1M passages
// (138M tokens) have 1.2M terms and 21M passages (2.9G tokens) 6.4M. Counts of 10M and
// more are those of raw (unstemmed, case-sensitive) tokens or of larger dumps (Pyserini's
// 76.7M-passage "wiki-all-6-3-tamber": 5.06G non-stop terms, 14,604,922 unique); set
// HeapsK to model those.
//
// Word frequencies: a Zipf–Mandelbrot law (r+q)^-s with s = 1.05, q = 2.7 (the fit
// usually quoted for English, a ≈ 1 and b ≈ 2.7 in Wikipedia's "Zipf's law" article;
// s = 1.05 gives "the" 3 to 4 % of tokens) that steepens beyond a crossover rank rc to
// (r+q)^-(1/β): real frequency-rank curves are broken power laws, slope about 1 to the
// tens of thousands of ranks and about 2 beyond (Ferrer i Cancho and Solé, "Two regimes in
// the frequency of words", 2001). The tail exponent 1/β is not a free choice: a word
// first appears when the text draws a rank beyond the vocabulary so far, so the law's
// mass beyond V must equal Heaps' derivative dV/dn, which fixes the tail exponent to 1/β
// and rc (crossover; about 31,000 with the defaults).
//
// # Mechanism
//
// Passage i has its own generator (seed, i), so passages are built in parallel and any
// prefix of a corpus is the smaller corpus. The vocabulary after i passages is
// V(i) = K·(i·L)^β (L the mean tokens per passage; at most MaxNewShare of the tokens at the
// very start, where the power law would exceed the token count). Passage i introduces the
// next ranks V(i)+1 .. V(i+1), each once at a random position: the Heaps derivative,
// integrated over the passage. Its other words are drawn from the rank law truncated to
// V(i+1), O(1) a word: an alias table over the first ranks, the inverse CDF of the
// continuous law beyond. So the output's distinct terms follow Heaps' law exactly, and the
// newest words are rare (most of the vocabulary's tail occurs a few times) as in real
// text.
//
// Words: ranks 1..100 are FunctionWords (common English words, most frequent first);
// then the word list (Debian's wamerican by default) filtered to lower-case words,
// capitalised proper nouns and apostrophe forms, one word per Porter stem, shuffled by the
// seed and loosely sorted by length. Beyond it (about 35,000 words from wamerican, where a
// 21M-passage corpus needs millions) words are synthesised from their rank: numbers,
// letter-number codes and pseudo-words that are their own Porter stem, so every rank has
// its own surface form and its own index term (bar the analyzer's stop words).
//
// Topics: a passage has 1 to 3 of Topics topics; a topic owns TopicWords mid-frequency
// ranks, one in each frequency stratum of a band of ranks (Model.draft). Queries take 1 to 3
// topic words of a passage, 0 to 2 other content words of it, sometimes a word it does not
// have, and sometimes a question's opening ("what is the"), 3 to 12 words in all; the
// passage is their one relevant document (passages sharing its topics are not judged:
// listing them would need an index of the corpus).
//
// # Output
//
// dir gets corpus.jsonl ({"_id","title","text","metadata":{"bucket","lang"}}, the
// metadata of internal/corpusgen), queries.jsonl (every judged query), queries-tune.jsonl
// and qrels/tune.tsv (the half of the queries whose id hashes even, for tuning),
// queries-report.jsonl and qrels/test.tsv (the other half, for reported figures: what
// beir.Load(dir, "test") reads), batch-queries.jsonl (BatchQueries queries for
// throughput: the judged ones, then more built the same way) and stats.json (Stats).
package zipfgen

import (
	"errors"
	"fmt"
	"math"
	"runtime"
)

// Options configure New and Generate. Zero values select the defaults.
type Options struct {
	N            int    // passages (default 1,000,000)
	Seed         uint64 // default 1
	TargetBytes  int    // mean title+text bytes of a passage (default 760)
	Queries      int    // judged queries, split into tuning and reported halves (default 1,000)
	BatchQueries int    // queries in batch-queries.jsonl (default 2,560)
	Workers      int    // passages built in parallel by this many goroutines (default GOMAXPROCS)

	// WordsPath is the word list (one word a line; default DefaultWordsPath); Words, when
	// set, is used instead.
	WordsPath string
	Words     []string

	ZipfExponent   float64 // s of the Zipf–Mandelbrot head (default 1.05)
	ZipfShift      float64 // q (default 2.7)
	HeapsK         float64 // K of V(n) = K·n^β (default 40)
	HeapsBeta      float64 // β (default 0.55); the tail exponent is 1/β
	MaxNewShare    float64 // most new words a token at the start (default 0.3)
	Topics         int     // topics (default 1,000)
	TopicWords     int     // ranks a topic owns (default 50)
	TopicBandStart int     // first rank of the topic band (default 1,000)
	TopicShare     float64 // chance a band word becomes a topic word (default 0.6)
}

// ErrOptions reports options the generator cannot honour.
var ErrOptions = errors.New("zipfgen: invalid options")

func (o *Options) defaults() {
	setI := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	setF := func(p *float64, v float64) {
		if *p <= 0 {
			*p = v
		}
	}
	setI(&o.N, 1_000_000)
	if o.Seed == 0 {
		o.Seed = 1
	}
	setI(&o.TargetBytes, 760)
	setI(&o.Queries, 1000)
	setI(&o.BatchQueries, 2560)
	setI(&o.Workers, runtime.GOMAXPROCS(0))
	if o.WordsPath == "" {
		o.WordsPath = DefaultWordsPath
	}
	setF(&o.ZipfExponent, 1.05)
	setF(&o.ZipfShift, 2.7)
	setF(&o.HeapsK, 40)
	setF(&o.HeapsBeta, 0.55)
	setF(&o.MaxNewShare, 0.3)
	setI(&o.Topics, 1000)
	setI(&o.TopicWords, 50)
	setI(&o.TopicBandStart, 1000)
	setF(&o.TopicShare, 0.6)
}

// Model is a configured generator: the vocabulary, the rank law and the passage length. Its
// methods are safe for concurrent use.
type Model struct {
	o         Options
	voc       *vocab
	law       *rankLaw
	tokensPer float64 // mean tokens (title + text) a passage
}

// New builds the model of o (defaults applied), reading the word list.
func New(o Options) (*Model, error) {
	o.defaults()
	if o.HeapsBeta >= 1 || o.MaxNewShare > 1 || o.TopicShare > 1 || o.TopicBandStart <= len(FunctionWords) {
		return nil, fmt.Errorf("%w: HeapsBeta %g, MaxNewShare %g, TopicShare %g must be < 1 and TopicBandStart %d > %d",
			ErrOptions, o.HeapsBeta, o.MaxNewShare, o.TopicShare, o.TopicBandStart, len(FunctionWords))
	}
	words := o.Words
	if words == nil {
		var err error
		if words, err = ReadWords(o.WordsPath); err != nil {
			return nil, err
		}
	}
	rc, err := crossover(o.ZipfExponent, o.ZipfShift, o.HeapsK, o.HeapsBeta)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	m := &Model{o: o, voc: buildVocab(words, o.Seed), law: newRankLaw(o.ZipfExponent, o.ZipfShift, o.HeapsBeta, rc)}
	m.calibrateLength()
	return m, nil
}

// calibrateLength sets the mean tokens a passage so that passages average TargetBytes:
// twice, it renders passages at fixed indices (so the figure does not depend on N) and
// divides the bytes by the tokens.
func (m *Model) calibrateLength() {
	m.tokensPer = float64(m.o.TargetBytes) / 6.5
	var d draft
	var title, text []byte
	for round := 0; round < 2; round++ {
		var bytes, tokens float64
		for k := 0; k < 400; k++ {
			i := 1000 + k*52_500 // spread over 21M passages, whatever N is
			rng := m.rng(i)
			m.draft(i, rng, &d)
			title, text = m.render(&d, rng, title[:0], text[:0])
			bytes += float64(len(title) + len(text))
			tokens += float64(len(d.title) + len(d.body))
		}
		m.tokensPer = float64(m.o.TargetBytes) / (bytes / tokens)
	}
}

// Options returns the model's options, defaults applied.
func (m *Model) Options() Options { return m.o }

// Word returns the surface form of rank r (r >= 1): every rank has its own, and its own
// Porter stem.
func (m *Model) Word(r int) string { return m.voc.Word(r) }

// DictionaryWords is the number of ranks taken from FunctionWords and the word list; the
// ranks after it are synthesised.
func (m *Model) DictionaryWords() int { return m.voc.size() }

// Crossover is the rank where the frequency law steepens from exponent s to 1/β.
func (m *Model) Crossover() int { return m.law.rc }

// TokensPerPassage is the mean number of words (title and text) a passage.
func (m *Model) TokensPerPassage() float64 { return m.tokensPer }

// Probability returns the probability of rank r under the untruncated rank law (for tests
// and plots).
func (m *Model) Probability(r int) float64 {
	l := m.law
	z := l.upTo(math.MaxInt32).sum
	if r <= l.rc {
		return math.Pow(float64(r)+l.q, -l.s) / z
	}
	return l.tailCoef * math.Pow(float64(r)+l.q, -l.a) / z
}
