package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Counter keeps counters per user and window, as robby's stores do for
// robby serve's limits per user.
type Counter interface {
	AddCount(ctx context.Context, user, name string, window time.Time, n int64) (int64, error)
}

// RunCounts checks a Counter: totals per user, counter and window; reads
// that write nothing; earlier windows forgotten; concurrent additions each
// counted once, each seeing a total of its own. open returns an empty store
// for one subtest, closed by t.Cleanup.
func RunCounts(t *testing.T, open func(t *testing.T) Counter) {
	ctx := context.Background()
	minute := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	t.Run("Totals", func(t *testing.T) {
		c := open(t)
		add := func(user, name string, window time.Time, n int64) int64 {
			t.Helper()
			total, err := c.AddCount(ctx, user, name, window, n)
			require.NoError(t, err)
			return total
		}
		assert.Zero(t, add("ann", "requests", minute, 0), "nothing counted yet")
		assert.Equal(t, int64(1), add("ann", "requests", minute, 1))
		assert.Equal(t, int64(3), add("ann", "requests", minute, 2))
		assert.Equal(t, int64(3), add("ann", "requests", minute, 0), "a read adds nothing")
		assert.Equal(t, int64(500), add("ann", "tokens", minute, 500), "each counter apart")
		assert.Equal(t, int64(1), add("bob", "requests", minute, 1), "each user apart")
		assert.Equal(t, int64(1), add("", "requests", minute, 1), "the default user is one too")

		next := minute.Add(time.Minute)
		assert.Equal(t, int64(1), add("ann", "requests", next, 1), "a new window starts at zero")
		assert.Zero(t, add("ann", "requests", minute, 0), "the window before is forgotten")
		assert.Equal(t, int64(500), add("ann", "tokens", minute, 0), "another counter's window is kept")
		assert.Equal(t, int64(1), add("bob", "requests", minute, 0), "another user's window is kept")

		_, err := c.AddCount(ctx, "ann", "requests", next, -1)
		assert.Error(t, err, "a counter only grows")
	})
	t.Run("Concurrent", func(t *testing.T) {
		c := open(t)
		const writers, each = 8, 25
		totals := make([]int64, 0, writers*each)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for range each {
					total, err := c.AddCount(ctx, "ann", "requests", minute, 1)
					if !assert.NoError(t, err, "writer %d", w) {
						return
					}
					mu.Lock()
					totals = append(totals, total)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(totals)
		want := make([]int64, writers*each)
		for i := range want {
			want[i] = int64(i + 1)
		}
		assert.Equal(t, want, totals, "every addition counted once, each total seen once")
		total, err := c.AddCount(ctx, "ann", "requests", minute, 0)
		require.NoError(t, err)
		assert.Equal(t, int64(writers*each), total)
	})
}
