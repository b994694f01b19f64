package pgstore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/internal/convstore"
	"github.com/robby-go/robby/internal/pgtest"
	"github.com/robby-go/robby/storetest"
)

// TestMigrateFromVersion1 opens a database that an earlier version wrote
// (each conversation holding its messages, forks copied): everything
// loads as it was, and forks and deletes work on it.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		err := convstore.Migrate(ctx, migrations[:1],
			func(ctx context.Context, stmt string) error { _, err := tx.Exec(ctx, stmt); return err },
			func(ctx context.Context, q string) (v int, err error) { return v, tx.QueryRow(ctx, q).Scan(&v) })
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO robby_store_conversations VALUES
			('alice', 'c', 'Alice''s', 2, now(), now()), ('bob', 'c', 'Bob''s', 1, now(), now()),
			('alice', 'fork', 'Alice''s', 1, now(), now());
			INSERT INTO robby_store_messages VALUES
			('alice', 'c', 1, '{"role":"user","content":"a1"}', NULL, now()),
			('alice', 'c', 2, NULL, 'failed', now()),
			('bob', 'c', 1, '{"role":"user","content":"b1"}', NULL, now()),
			('alice', 'fork', 1, '{"role":"user","content":"a1"}', NULL, now())`)
		return err
	})
	require.NoError(t, err)
	require.NoError(t, conn.Close(ctx))

	s, err := Open(ctx, dsn)
	require.NoError(t, err)
	defer s.Close()
	storetest.CheckMigrated(t, s)
}
