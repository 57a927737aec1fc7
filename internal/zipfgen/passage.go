package zipfgen

import (
	"math"
	"math/rand/v2"
)

// draft is passage i before rendering: the ranks of its title and body words.
type draft struct {
	topics  []int
	title   []int32
	body    []int32
	topical []bool  // body[k] was drawn as a topic word
	pos     []int32 // scratch: body positions
}

// rng returns passage i's generator (stream i of the seed), so any passage can be rebuilt
// alone: for queries, in parallel, or in a prefix of a larger corpus.
func (m *Model) rng(i int) *rand.Rand { return rand.New(rand.NewPCG(m.o.Seed, uint64(i))) }

// Vocab returns the vocabulary size after the first i passages: Heaps' law in the corpus's
// expected token count n = i·TokensPerPassage, V = K·n^β, capped at MaxNewShare·n (the
// power law overshoots the type count of short texts, V(n) > n for n < K^(1/(1-β))).
func (m *Model) Vocab(i int) int {
	if i <= 0 {
		return 0
	}
	n := float64(i) * m.tokensPer
	return int(math.Min(m.o.MaxNewShare*n, m.o.HeapsK*math.Pow(n, m.o.HeapsBeta)))
}

// draft builds passage i's words.
//
// Its length is uniform in [L/2, 3L/2] tokens, L the mean that makes TargetBytes. It has
// 1 to 3 topics. It introduces the ranks Vocab(i)+1 .. Vocab(i+1), each once at a random
// position; every other body word is drawn from the rank law truncated to Vocab(i+1).
// A drawn rank in the topic band (TopicBandStart .. +Topics·TopicWords) keeps its frequency
// stratum and, with probability TopicShare, becomes the word of that stratum of one of the
// passage's topics (topic t owns ranks start+t, start+t+T, start+t+2T, ...). Each
// stratum's total mass is kept, so the law holds on log-binned ranks, and every topic's
// words cover frequent to rare. The title is 1 to 4 words: a frequent word of the first
// topic, then content words (rank > len(FunctionWords)), title-cased when rendered.
func (m *Model) draft(i int, rng *rand.Rand, d *draft) {
	o := &m.o
	vPrev, vCur := m.Vocab(i), m.Vocab(i+1)
	law := m.law.upTo(vCur)
	length := max(3, int(math.Round(m.tokensPer*(0.5+rng.Float64()))))

	d.topics = d.topics[:0]
	nt := 1
	if u := rng.Float64(); u > 0.5 {
		nt = 2
		if u > 0.85 {
			nt = 3
		}
	}
	for len(d.topics) < nt {
		t := rng.IntN(o.Topics)
		dup := false
		for _, x := range d.topics {
			dup = dup || x == t
		}
		if !dup {
			d.topics = append(d.topics, t)
		}
	}
	topicWord := func(t, stratum int) int { return o.TopicBandStart + t + o.Topics*stratum }
	band := o.TopicBandStart + o.Topics*o.TopicWords

	d.title = d.title[:0]
	nTitle := 1 + rng.IntN(4)
	if r := topicWord(d.topics[0], rng.IntN(4)); r <= vCur {
		d.title = append(d.title, int32(r))
	}
	for len(d.title) < nTitle {
		r := law.draw(rng)
		for try := 0; try < 8 && r <= len(FunctionWords); try++ {
			r = law.draw(rng)
		}
		d.title = append(d.title, int32(r))
	}

	nBody := max(length-len(d.title), vCur-vPrev, 1)
	d.body, d.topical = d.body[:0], d.topical[:0]
	for k := 0; k < nBody; k++ {
		r := law.draw(rng)
		top := false
		if r >= o.TopicBandStart && r < band && rng.Float64() < o.TopicShare {
			t := d.topics[rng.IntN(len(d.topics))]
			if x := topicWord(t, (r-o.TopicBandStart)/o.Topics); x <= vCur {
				r, top = x, true
			}
		}
		d.body = append(d.body, int32(r))
		d.topical = append(d.topical, top)
	}
	// the new words, at distinct random positions (a partial Fisher–Yates shuffle)
	d.pos = d.pos[:0]
	for k := 0; k < nBody; k++ {
		d.pos = append(d.pos, int32(k))
	}
	for k := 0; k < vCur-vPrev; k++ {
		j := k + rng.IntN(nBody-k)
		d.pos[k], d.pos[j] = d.pos[j], d.pos[k]
		d.body[d.pos[k]], d.topical[d.pos[k]] = int32(vPrev+1+k), false
	}
}

// render appends passage d's title and text: the title title-cased; the text sentences of
// 6 to 25 words, capitalised and closed by a period, with an occasional comma, a possessive
// "'s" after a capitalised word, and a hyphen joining two lower-case content words
// ("river-bank"),
// which the English analyzer splits back into the two words.
func (m *Model) render(d *draft, rng *rand.Rand, title, text []byte) ([]byte, []byte) {
	for k, r := range d.title {
		if k > 0 {
			title = append(title, ' ')
		}
		start := len(title)
		title = m.voc.appendWord(title, int(r))
		upperFirst(title[start:])
	}
	atStart, left := true, 0
	for k, r := range d.body {
		if atStart {
			if k > 0 {
				text = append(text, ' ')
			}
			left = 6 + rng.IntN(20)
		} else {
			switch u := rng.Float64(); {
			case u < 0.07:
				text = append(text, ", "...)
			case u < 0.085 && d.body[k-1] > int32(len(FunctionWords)) && isLowerWord(text) && m.lowerWord(int(r)):
				text = append(text, '-')
			default:
				text = append(text, ' ')
			}
		}
		start := len(text)
		text = m.voc.appendWord(text, int(r))
		if text[start] >= 'A' && text[start] <= 'Z' && rng.Float64() < 0.08 {
			text = append(text, "'s"...)
		}
		if atStart {
			upperFirst(text[start:])
		}
		left--
		if atStart = left == 0 || k == len(d.body)-1; atStart {
			text = append(text, '.')
		}
	}
	return title, text
}

// lowerWord says whether rank r's word is a lower-case letters-only content word.
func (m *Model) lowerWord(r int) bool {
	if r <= len(FunctionWords) || r > m.voc.size() {
		return false // synthetic: keep them unjoined
	}
	for _, c := range []byte(m.voc.words[r-1]) {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// isLowerWord says whether text ends with a lower-case letters-only word.
func isLowerWord(text []byte) bool {
	n := 0
	for i := len(text) - 1; i >= 0 && text[i] != ' '; i-- {
		c := text[i]
		if c < 'a' || c > 'z' {
			return false
		}
		n++
	}
	return n > 0
}

func upperFirst(b []byte) {
	if len(b) > 0 && b[0] >= 'a' && b[0] <= 'z' {
		b[0] -= 'a' - 'A'
	}
}
