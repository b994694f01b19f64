package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// newSegment stores an empty segment of user, kept by one conversation, and
// returns its ID. It continues the first base messages of segment parent (none:
// 0).
func newSegment(ctx context.Context, tx pgx.Tx, user string, parent, base int64) (int64, error) {
	var p *int64
	if parent != 0 {
		p = &parent
	}
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO robby_store_segments (user_id, parent, base, refs)
		VALUES ($1, $2, $3, 1) RETURNING id`, user, p, base).Scan(&id)
	if err != nil || p == nil {
		return id, err
	}
	_, err = tx.Exec(ctx, `UPDATE robby_store_segments SET refs = refs + 1 WHERE id = $1`, parent)
	return id, err
}

// holder returns the segment that holds message n of seg's conversation: seg or
// one it continues. It is 0 when n is 0. A fork at n so continues it directly:
// a chain of segments holds no segment a fork skips.
//
// Here and in Load, each step up is a subquery with a LIMIT, which the planner
// keeps apart. So each step is an index lookup, whatever the statistics say. A
// fresh table's statistics would have it scan the table at every step.
func holder(ctx context.Context, tx pgx.Tx, seg, n int64) (int64, error) {
	if n == 0 {
		return 0, nil
	}
	var id int64
	err := tx.QueryRow(ctx, `WITH RECURSIVE up(id, parent, base) AS (
			SELECT id, parent, base FROM robby_store_segments WHERE id = $1
			UNION ALL
			SELECT s.id, s.parent, s.base FROM up, LATERAL (
				SELECT id, parent, base FROM robby_store_segments WHERE id = up.parent LIMIT 1
			) s WHERE up.base >= $2
		)
		SELECT id FROM up WHERE base < $2`, seg, n).Scan(&id)
	return id, err
}

// release drops a reference to segment seg. When it was the last, it deletes
// seg (its messages go with it), then releases the segment seg continued.
func release(ctx context.Context, tx pgx.Tx, seg int64) error {
	for seg != 0 {
		var refs int64
		var parent *int64
		err := tx.QueryRow(ctx, `UPDATE robby_store_segments SET refs = refs - 1 WHERE id = $1
			RETURNING refs, parent`, seg).Scan(&refs, &parent)
		if err != nil || refs > 0 {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM robby_store_segments WHERE id = $1`, seg); err != nil {
			return err
		}
		seg = 0
		if parent != nil {
			seg = *parent
		}
	}
	return nil
}
