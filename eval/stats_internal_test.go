package eval

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWilson(t *testing.T) {
	for _, tc := range []struct {
		c, n   int
		lo, hi float64
	}{
		{3, 5, 0.2307, 0.8824},
		{0, 5, 0, 0.4345},
		{5, 5, 0.5655, 1},
		{30, 50, 0.4618, 0.7239},
	} {
		lo, hi := wilson(tc.c, tc.n)
		assert.InDelta(t, tc.lo, lo, 1e-4, "%d/%d", tc.c, tc.n)
		assert.InDelta(t, tc.hi, hi, 1e-4, "%d/%d", tc.c, tc.n)
	}
}

func TestPassHatK(t *testing.T) {
	assert.InDelta(t, 0.1, passHatK(3, 5, 3), 1e-12)
	assert.InDelta(t, 0.6, passHatK(3, 5, 1), 1e-12)
	assert.InDelta(t, 1, passHatK(5, 5, 5), 1e-12)
	assert.InDelta(t, 0, passHatK(2, 5, 3), 1e-12)
	assert.True(t, math.IsNaN(passHatK(3, 2, 3)))
}

// TestPassHatKUnbiased: averaged over every outcome of n runs of pass
// chance p, weighted by its binomial probability, the estimate is p^k.
func TestPassHatKUnbiased(t *testing.T) {
	const n, k, p = 5, 3, 0.6
	mean := 0.0
	for c := 0; c <= n; c++ {
		prob := math.Exp(logChoose(n, c)) * math.Pow(p, float64(c)) * math.Pow(1-p, float64(n-c))
		mean += prob * passHatK(c, n, k)
	}
	assert.InDelta(t, 0.216, mean, 1e-12)
}

// TestFisher checks p-values against R's fisher.test.
func TestFisher(t *testing.T) {
	assert.InDelta(t, 0.007937, fisher(5, 5, 0, 5), 1e-6)
	assert.InDelta(t, 0.1667, fisher(5, 5, 2, 5), 1e-4)
	assert.InDelta(t, 1, fisher(6, 6, 5, 6), 1e-12)
	assert.InDelta(t, 1, fisher(3, 5, 3, 5), 1e-12)
	assert.InDelta(t, 0.002165, fisher(6, 6, 0, 6), 1e-6)
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	assert.Equal(t, time.Duration(5), percentile(ds, 50))
	assert.Equal(t, time.Duration(10), percentile(ds, 95))
	assert.Equal(t, time.Duration(0), percentile(nil, 50))
}
