package eval

import (
	"math"
	"slices"
	"time"
)

// z95 is the normal quantile of a two-sided 95 % interval.
const z95 = 1.959963984540054

// wilson returns the 95 % Wilson score interval of a pass rate of c
// passes in n runs.
func wilson(c, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	p, nf := float64(c)/float64(n), float64(n)
	z2 := z95 * z95
	center := (p + z2/(2*nf)) / (1 + z2/nf)
	half := z95 / (1 + z2/nf) * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(0, center-half), min(1, center+half)
}

// passHatK estimates pass^k from c passes in n runs as C(c,k)/C(n,k). That is
// the chance that k runs drawn from the n without replacement all passed, an
// unbiased estimate of p^k. It needs k <= n.
func passHatK(c, n, k int) float64 {
	if k > n || n == 0 {
		return math.NaN()
	}
	est := 1.0
	for i := range k {
		est *= float64(c-i) / float64(n-i)
	}
	return max(est, 0)
}

// fisher returns the two-sided p-value of Fisher's exact test on the 2x2 table
// of passes and failures of two runs of a case. That is the chance, were both
// equally good, of tables at most as likely as this one.
func fisher(pass1, n1, pass2, n2 int) float64 {
	passes, total := pass1+pass2, n1+n2
	lo, hi := max(0, passes-n2), min(passes, n1)
	logP := func(a int) float64 {
		return logChoose(n1, a) + logChoose(n2, passes-a) - logChoose(total, passes)
	}
	observed := logP(pass1)
	p := 0.0
	for a := lo; a <= hi; a++ {
		if lp := logP(a); lp <= observed+1e-7 {
			p += math.Exp(lp)
		}
	}
	return min(p, 1)
}

func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// percentile returns the nearest-rank q-th percentile of ds, which it
// sorts; 0 for none.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(q/100*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
