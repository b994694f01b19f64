package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"
)

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
