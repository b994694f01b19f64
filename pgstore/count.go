package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AddCount adds n to the user's counter called name in the window that starts
// at window, such as the minute or the day of now. It returns the counter's
// total in that window. The counter forgets its earlier windows. With n 0, it
// only reads the total, without writing. Replicas sharing the database share
// the counters: each addition is one atomic statement. robby serve's limits
// per user count requests and tokens so.
func (s *Store) AddCount(ctx context.Context, user, name string, window time.Time, n int64) (int64, error) {
	var total int64
	if n < 0 {
		return 0, fmt.Errorf("counter %q: cannot add %d", name, n)
	}
	if n == 0 {
		err := s.pool.QueryRow(ctx, `SELECT value FROM robby_store_counts
			WHERE user_id = $1 AND name = $2 AND window_start = $3`, user, name, window).Scan(&total)
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
		return total, countErr(name, err)
	}
	err := s.pool.QueryRow(ctx, `WITH gone AS (
			DELETE FROM robby_store_counts WHERE user_id = $1 AND name = $2 AND window_start < $3
		)
		INSERT INTO robby_store_counts (user_id, name, window_start, value) VALUES ($1, $2, $3, $4)
		ON CONFLICT (user_id, name, window_start) DO UPDATE SET value = robby_store_counts.value + excluded.value
		RETURNING value`, user, name, window, n).Scan(&total)
	return total, countErr(name, err)
}

// countErr says which counter failed.
func countErr(name string, err error) error {
	if err != nil {
		return fmt.Errorf("counter %q: %w", name, err)
	}
	return nil
}
