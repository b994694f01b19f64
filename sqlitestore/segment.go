package sqlitestore

import (
	"context"
	"database/sql"
)

// newSegment stores an empty segment of user, kept by one conversation, and
// returns its ID. It continues the first base messages of segment parent (none:
// 0).
func newSegment(ctx context.Context, tx stmtTx, user string, parent, base int64) (int64, error) {
	p := sql.NullInt64{Int64: parent, Valid: parent != 0}
	var id int64
	err := tx.QueryRowContext(ctx, `INSERT INTO robby_store_segments (user_id, parent, base, refs)
		VALUES (?, ?, ?, 1) RETURNING id`, user, p, base).Scan(&id)
	if err != nil || !p.Valid {
		return id, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE robby_store_segments SET refs = refs + 1 WHERE id = ?`, parent)
	return id, err
}

// holder returns the segment that holds message n of seg's conversation: seg or
// one it continues. It is 0 when n is 0. A fork at n so continues it directly:
// a chain of segments holds no segment a fork skips.
func holder(ctx context.Context, tx stmtTx, seg, n int64) (int64, error) {
	if n == 0 {
		return 0, nil
	}
	var id int64
	err := tx.QueryRowContext(ctx, `WITH RECURSIVE up(id, parent, base) AS (
			SELECT id, parent, base FROM robby_store_segments WHERE id = ?
			UNION ALL
			SELECT s.id, s.parent, s.base FROM up JOIN robby_store_segments s ON s.id = up.parent WHERE up.base >= ?
		)
		SELECT id FROM up WHERE base < ?`, seg, n, n).Scan(&id)
	return id, err
}

// release drops a reference to segment seg. When it was the last, it deletes
// seg and its messages, then releases the segment seg continued.
func release(ctx context.Context, tx stmtTx, seg int64) error {
	for seg != 0 {
		var refs int64
		var parent sql.NullInt64
		err := tx.QueryRowContext(ctx, `UPDATE robby_store_segments SET refs = refs - 1 WHERE id = ?
			RETURNING refs, parent`, seg).Scan(&refs, &parent)
		if err != nil || refs > 0 {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM robby_store_messages WHERE segment = ?`, seg); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM robby_store_segments WHERE id = ?`, seg); err != nil {
			return err
		}
		seg = parent.Int64
	}
	return nil
}
