package zipfgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// rankLaw is the two-regime Zipf–Mandelbrot law over ranks 1, 2, ...:
//
//	w(r) = (r+q)^-s                      for r <= rc
//	w(r) = (rc+q)^(a-s) · (r+q)^-a       for r >  rc, a = 1/β
//
// continuous at rc. Ranks 1..h (h = min(rc, maxHead)) are drawn exactly (an alias table,
// or a binary search of the prefix sums when the vocabulary is still below h); the ranks
// above h by the inverse CDF of the continuous density w(x) on [r-1/2, r+1/2), which is
// within a fraction of a percent of the discrete law there. Every draw is O(1) (O(log h)
// while the vocabulary is under h, at the very start of a corpus).
type rankLaw struct {
	s, q, a  float64
	rc, h    int
	prefix   []float64 // prefix[r] = w(1) + ... + w(r), r <= h
	alias    aliasTable
	tailCoef float64 // (rc+q)^(a-s)
}

const maxHead = 1 << 16

func newRankLaw(s, q, beta float64, rc int) *rankLaw {
	l := &rankLaw{s: s, q: q, a: 1 / beta, rc: rc, h: min(rc, maxHead)}
	l.prefix = make([]float64, l.h+1)
	w := make([]float64, l.h)
	for r := 1; r <= l.h; r++ {
		w[r-1] = math.Pow(float64(r)+q, -s)
		l.prefix[r] = l.prefix[r-1] + w[r-1]
	}
	l.alias = newAlias(w)
	l.tailCoef = math.Pow(float64(rc)+q, l.a-s)
	return l
}

// segMass is ∫ coef·(x+q)^-e dx over [lo-1/2, hi+1/2] (hi may be +Inf when e > 1).
func segMass(coef, e, q float64, lo, hi float64) float64 {
	x0, x1 := lo-0.5+q, hi+0.5+q
	if hi <= lo-1 {
		return 0
	}
	if e == 1 {
		return coef * math.Log(x1/x0)
	}
	return coef * (math.Pow(x0, 1-e) - math.Pow(x1, 1-e)) / (e - 1)
}

// segDraw draws a rank in [lo, hi] from the continuous density (x+q)^-e by its inverse CDF.
func segDraw(u, e, q float64, lo, hi int) int {
	x0, x1 := float64(lo)-0.5+q, float64(hi)+0.5+q
	var x float64
	if e == 1 {
		x = x0 * math.Exp(u*math.Log(x1/x0))
	} else {
		p0, p1 := math.Pow(x0, 1-e), math.Pow(x1, 1-e)
		x = math.Pow(p0-u*(p0-p1), 1/(1-e))
	}
	r := int(math.Floor(x - q + 0.5))
	return max(lo, min(hi, r))
}

// truncLaw is the law conditioned on r <= v (the vocabulary introduced so far).
type truncLaw struct {
	l                *rankLaw
	v                int
	mHead, mMid, sum float64 // cumulative masses of the three segments
}

func (l *rankLaw) upTo(v int) truncLaw {
	t := truncLaw{l: l, v: v}
	t.mHead = l.prefix[min(v, l.h)]
	t.mMid = t.mHead
	if v > l.h {
		t.mMid += segMass(1, l.s, l.q, float64(l.h+1), float64(min(v, l.rc)))
	}
	t.sum = t.mMid
	if v > l.rc {
		t.sum += segMass(l.tailCoef, l.a, l.q, float64(l.rc+1), float64(v))
	}
	return t
}

// draw returns a rank in [1, v].
func (t *truncLaw) draw(rng *rand.Rand) int {
	l := t.l
	u := rng.Float64() * t.sum
	switch {
	case u < t.mHead:
		if t.v >= l.h {
			return l.alias.draw(rng)
		}
		// prefix[r-1] <= u < prefix[r]
		r := sort.SearchFloat64s(l.prefix[1:t.v+1], u)
		for r < t.v && l.prefix[r+1] <= u {
			r++
		}
		return min(r+1, t.v)
	case u < t.mMid:
		return segDraw(rng.Float64(), l.s, l.q, l.h+1, min(t.v, l.rc))
	default:
		return segDraw(rng.Float64(), l.a, l.q, l.rc+1, t.v)
	}
}

// aliasTable is Vose's alias method over ranks 1..len(prob).
type aliasTable struct {
	prob  []float64
	alias []int32
}

func newAlias(w []float64) aliasTable {
	n := len(w)
	t := aliasTable{prob: make([]float64, n), alias: make([]int32, n)}
	var sum float64
	for _, x := range w {
		sum += x
	}
	scaled := make([]float64, n)
	var small, large []int32
	for i, x := range w {
		scaled[i] = x * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, g := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		t.prob[s], t.alias[s] = scaled[s], g
		scaled[g] -= 1 - scaled[s]
		if scaled[g] < 1 {
			large = large[:len(large)-1]
			small = append(small, g)
		}
	}
	for _, i := range append(small, large...) {
		t.prob[i], t.alias[i] = 1, i
	}
	return t
}

func (t *aliasTable) draw(rng *rand.Rand) int {
	x := rng.Uint64()
	i := int((x >> 32) * uint64(len(t.prob)) >> 32)
	if float64(uint32(x))*(1.0/(1<<32)) < t.prob[i] {
		return i + 1
	}
	return int(t.alias[i]) + 1
}

// headSum is Σ_{r=1..R} (r+q)^-s: exact to 100,000, Euler–Maclaurin (the midpoint
// integral) beyond.
func headSum(s, q float64, R int) float64 {
	const exact = 100_000
	var sum float64
	for r := 1; r <= min(R, exact); r++ {
		sum += math.Pow(float64(r)+q, -s)
	}
	if R > exact {
		sum += segMass(1, s, q, exact+1, float64(R))
	}
	return sum
}

// crossover solves for rc: the rank where the law steepens from exponent s to a = 1/β so
// that it is consistent with Heaps' law V(n) = K·n^β. A word first appears about when the
// corpus has drawn a rank beyond the current vocabulary, so the law's mass beyond V must
// equal Heaps' derivative there, dV/dn = β·K^(1/β)·V^(1-1/β). For V well above rc the mass
// beyond V is tailCoef·V^(1-a)/((a-1)·Z), which gives
//
//	(rc+q)^(a-s) / ((a-1)·Z(rc)) = β·K^a,   Z(rc) = Σ_{r<=rc} w(r) + tail mass,
//
// increasing in rc (a > s); solved by bisection on log rc.
func crossover(s, q, K, beta float64) (int, error) {
	a := 1 / beta
	if a <= s {
		return 0, fmt.Errorf("zipfgen: Heaps exponent %.3g needs a steeper tail than the Zipf exponent %.3g (1/β > s)", beta, s)
	}
	target := math.Log(beta) + a*math.Log(K)
	g := func(rc int) float64 {
		coef := math.Pow(float64(rc)+q, a-s)
		z := headSum(s, q, rc) + segMass(coef, a, q, float64(rc+1), math.Inf(1))
		return math.Log(coef) - math.Log((a-1)*z) - target
	}
	lo, hi := 1, 1<<27
	if g(lo) >= 0 {
		return lo, nil
	}
	if g(hi) <= 0 {
		return hi, nil
	}
	for hi-lo > 1 {
		mid := int(math.Sqrt(float64(lo) * float64(hi)))
		if mid <= lo || mid >= hi {
			mid = (lo + hi) / 2
		}
		if g(mid) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}
