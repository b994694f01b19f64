package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// AddCount adds n to the user's counter called name in the window that starts
// at window, such as the minute or the day of now. It returns the counter's
// total in that window. The counter forgets its earlier windows. With n 0, it
// only reads the total, without writing. Replicas sharing the file share the
// counters: each addition is atomic. robby serve's limits per user count
// requests and tokens so.
func (s *Store) AddCount(ctx context.Context, user, name string, window time.Time, n int64) (int64, error) {
	start := window.UnixMicro()
	var total int64
	if n < 0 {
		return 0, fmt.Errorf("counter %q: cannot add %d", name, n)
	}
	if n == 0 {
		defer s.readStmts.prepare(ctx)
		err := s.readStmts.queryRow(ctx, `SELECT value FROM robby_store_counts
			WHERE user_id = ? AND name = ? AND window_start = ?`, user, name, start).Scan(&total)
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		return total, countErr(name, err)
	}
	err := s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM robby_store_counts
			WHERE user_id = ? AND name = ? AND window_start < ?`, user, name, start); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO robby_store_counts (user_id, name, window_start, value)
			VALUES (?, ?, ?, ?)
			ON CONFLICT (user_id, name, window_start) DO UPDATE SET value = value + excluded.value
			RETURNING value`, user, name, start, n).Scan(&total)
	})
	return total, countErr(name, err)
}

// countErr says which counter failed.
func countErr(name string, err error) error {
	if err != nil {
		return fmt.Errorf("counter %q: %w", name, err)
	}
	return nil
}
