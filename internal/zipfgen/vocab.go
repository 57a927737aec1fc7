package zipfgen

import (
	"bufio"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"

	porterstemmer "github.com/blevesearch/go-porterstemmer"
)

// DefaultWordsPath is the word list Generate reads when Options gives none: Debian's
// wamerican package (apt-get install wamerican), about 104,000 entries.
const DefaultWordsPath = "/usr/share/dict/words"

// FunctionWords are ranks 1, 2, ...: common English words, most frequent first (the head of
// the frequency lists of general English and of Wikipedia). Each has its own Porter stem, so
// every rank stays a distinct index term.
var FunctionWords = []string{
	"the", "of", "and", "in", "to", "a", "was", "is", "for", "as",
	"on", "by", "with", "he", "that", "at", "from", "his", "it", "an",
	"were", "are", "which", "this", "be", "also", "has", "or", "had", "first",
	"not", "their", "after", "but", "him", "they", "new", "have", "who", "her",
	"she", "two", "been", "other", "when", "there", "all", "during", "into", "school",
	"time", "may", "years", "more", "most", "only", "over", "city", "some", "world",
	"would", "where", "later", "up", "such", "used", "many", "can", "state", "about",
	"national", "out", "known", "university", "united", "then", "made", "film", "than", "born",
	"season", "so", "these", "while", "between", "under", "team", "no", "through", "three",
	"both", "american", "part", "became", "early", "what", "i", "we", "you", "war",
}

// vocab maps ranks to surface words: ranks 1..len(words) are FunctionWords and then the
// filtered, shuffled word list; every later rank is synthesised from its number (synth).
type vocab struct {
	seed  uint64
	words []string
	stems map[string]struct{} // Porter stems of words: synthetic words avoid them
	nDict int                 // list words kept (len(words) - len(FunctionWords))
}

// ReadWords reads a word list, one word a line (blank lines skipped).
func ReadWords(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("zipfgen: word list: %w", err)
	}
	defer f.Close()
	return readWords(f)
}

func readWords(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if w := strings.TrimSpace(sc.Text()); w != "" {
			out = append(out, w)
		}
	}
	return out, sc.Err()
}

// stemKey is the term the English BM25 analyzer makes of a single-token word: lower case,
// Porter stem (Bleve's porter filter runs go-porterstemmer on the lower-cased token).
func stemKey(w string) string { return porterstemmer.StemString(w) }

// keepWord says whether a word-list entry is used: lower-case ASCII words, capitalised ones
// of three letters or more (proper nouns: "Boston") and forms with one inner apostrophe
// ("o'clock", "O'Brien"), each with a vowel; two-letter words only from shortWords (the
// lists' other two-letter entries are abbreviations, symbols and Roman numerals); no
// possessive or "'s" contraction (the English analyzer's possessive filter would fold it
// into its base word). Hyphenated entries are left out: the analyzer splits them into two
// other terms; hyphenated forms appear in the text instead as two vocabulary words joined
// by '-', which is what the analyzer sees of them in real text.
func keepWord(w string) bool {
	if len(w) < 2 || strings.HasSuffix(w, "'s") || !strings.ContainsAny(w, "aeiouyAEIOUY") {
		return false
	}
	if len(w) == 2 {
		return shortWords[w]
	}
	apos := 0
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'a' && c <= 'z':
		case c >= 'A' && c <= 'Z':
			// capital only first or right after the apostrophe (O'Brien, L'Oreal)
			if i != 0 && w[i-1] != '\'' {
				return false
			}
		case c == '\'':
			apos++
			if apos > 1 || i == 0 || i == len(w)-1 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// shortWords are the two-letter words keepWord accepts.
var shortWords = map[string]bool{
	"am": true, "an": true, "as": true, "at": true, "be": true, "by": true, "do": true, "go": true,
	"he": true, "hi": true, "if": true, "in": true, "is": true, "it": true, "me": true, "my": true,
	"no": true, "of": true, "oh": true, "ok": true, "on": true, "or": true, "ox": true, "so": true,
	"to": true, "up": true, "us": true, "we": true,
}

// buildVocab filters list (keepWord), keeps one word per Porter stem (the first in
// lower-case order: "abandon", not "abandoned"), drops the stems of FunctionWords,
// shuffles the rest with seed and then sorts it stably by length plus noise, so frequent
// ranks get shorter words on average (Zipf's law of abbreviation) without a strict order.
func buildVocab(list []string, seed uint64) *vocab {
	v := &vocab{seed: seed, stems: make(map[string]struct{}, len(list))}
	for _, w := range FunctionWords {
		v.words = append(v.words, w)
		v.stems[stemKey(w)] = struct{}{}
	}
	cand := make([]string, 0, len(list))
	for _, w := range list {
		if keepWord(w) {
			cand = append(cand, w)
		}
	}
	sort.Slice(cand, func(i, j int) bool {
		li, lj := strings.ToLower(cand[i]), strings.ToLower(cand[j])
		if li != lj {
			return li < lj
		}
		return cand[i] > cand[j] // lower case ("bill") before capitalised ("Bill")
	})
	dict := cand[:0]
	for _, w := range cand {
		k := stemKey(w)
		if _, dup := v.stems[k]; dup {
			continue
		}
		v.stems[k] = struct{}{}
		dict = append(dict, w)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed_0f_70cab))
	rng.Shuffle(len(dict), func(i, j int) { dict[i], dict[j] = dict[j], dict[i] })
	keys := make([]float64, len(dict))
	for i, w := range dict {
		keys[i] = float64(len(w)) + 6*rng.Float64()
	}
	idx := make([]int, len(dict))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
	for _, i := range idx {
		v.words = append(v.words, dict[i])
	}
	v.nDict = len(dict)
	return v
}

// size is the number of ranks with a word-list word; later ranks are synthesised.
func (v *vocab) size() int { return len(v.words) }

// Word returns the surface form of rank r (r >= 1).
func (v *vocab) Word(r int) string { return string(v.appendWord(nil, r)) }

// appendWord appends rank r's surface form to dst.
func (v *vocab) appendWord(dst []byte, r int) []byte {
	if r <= len(v.words) {
		return append(dst, v.words[r-1]...)
	}
	return v.synth(dst, uint64(r-len(v.words)-1))
}

// Syllables of the synthetic words (pseudo-words, read as names and foreign words, the
// bulk of a large corpus's rare terms). A word is k-1 open syllables (onset + vowel) and a
// closed final one (onset + vowel + coda). Onsets are consonant runs and vowels single
// letters, so a word splits back into its syllables one way only: the encoding below is
// injective. The finals avoid every ending a Porter step removes or rewrites (-s, -e, -y,
// -ed, -ing, -er, -al, -ic, -or as in -ator, ...), so a synthetic word is its own stem.
var (
	onsets = []string{"b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
		"bl", "br", "ch", "cl", "cr", "dr", "fl", "fr", "gl", "gr", "kr", "pl", "pr", "sh", "sk", "sl", "sp", "st", "str", "th", "tr"}
	openVowels  = []string{"a", "e", "i", "o", "u"}
	finalVowels = []string{"a", "i", "o", "u"}
	codas       = []string{"b", "d", "g", "k", "m", "n", "p", "r", "t", "x", "z"}
	open        = func() (s []string) {
		for _, o := range onsets {
			for _, v := range openVowels {
				s = append(s, o+v)
			}
		}
		return s
	}()
	finals = func() (s []string) {
		for _, o := range onsets {
			for _, v := range finalVowels {
				for _, c := range codas {
					if v == "o" && c == "r" {
						continue // -ator -> -ate
					}
					s = append(s, o+v+c)
				}
			}
		}
		return s
	}()
)

// splitmix is SplitMix64's finaliser: a well-mixed hash of x.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// synth appends synthetic word j (0-based, rank len(words)+1+j). A hash of (seed, j) picks
// its family; each family encodes j itself, injectively, and the families' forms are
// disjoint (digits only; one letter then digits; letters only), so no two ranks share a
// form:
//   - 10 %: a number ("1987", "40213"), as Wikipedia's many years, counts and codes;
//   - 8 %: a letter and a number ("b52", "m4017"): models, units, identifiers;
//   - the rest: a pseudo-word of two syllables or more ("bracodun"), a third of them
//     capitalised as proper nouns. One that happens to be the stem of a list word gets
//     'q's appended (no pseudo-word ends in q) until it is not.
func (v *vocab) synth(dst []byte, j uint64) []byte {
	h := splitmix(v.seed*0x9e3779b97f4a7c15 ^ j)
	switch fam := h % 100; {
	case fam < 10:
		return strconv.AppendUint(dst, j+10, 10)
	case fam < 18:
		dst = append(dst, byte('a'+j%26))
		return strconv.AppendUint(dst, j/26+2, 10)
	}
	start := len(dst)
	// k syllables: count(k) = len(open)^(k-1) * len(finals), k = 2, 3, ...
	n := uint64(len(open))
	block := n * uint64(len(finals))
	k := 2
	for j >= block {
		j -= block
		block *= n
		k++
	}
	// an affine bijection of the block (1,000,003 is a prime, so coprime to its size), so
	// neighbouring ranks differ in every syllable, not only the last
	hi, lo := bits.Mul64(j, 1_000_003)
	_, j = bits.Div64(hi, lo, block)
	j = (j + v.seed%block) % block
	f := j % uint64(len(finals))
	j /= uint64(len(finals))
	for i := 0; i < k-1; i++ {
		dst = append(dst, open[j%n]...)
		j /= n
	}
	dst = append(dst, finals[f]...)
	for {
		if _, hit := v.stems[string(dst[start:])]; !hit {
			break
		}
		dst = append(dst, 'q')
	}
	if (h>>8)%3 == 0 {
		dst[start] -= 'a' - 'A'
	}
	return dst
}
