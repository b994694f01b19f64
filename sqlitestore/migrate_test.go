package sqlitestore

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby/internal/convstore"
	"github.com/robby-go/robby/storetest"
)

// TestMigrateFromVersion1 opens a file that an earlier version wrote
// (each conversation holding its messages, forks copied): everything
// loads as it was, and forks and deletes work on it.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	tx, err := db.Begin()
	require.NoError(t, err)
	require.NoError(t, convstore.Migrate(ctx, migrations[:1],
		func(ctx context.Context, stmt string) error { _, err := tx.ExecContext(ctx, stmt); return err },
		func(ctx context.Context, q string) (v int, err error) { return v, tx.QueryRowContext(ctx, q).Scan(&v) }))
	_, err = tx.Exec(`INSERT INTO robby_store_conversations VALUES
		('alice', 'c', 'Alice''s', 2, 1, 2), ('bob', 'c', 'Bob''s', 1, 3, 4), ('alice', 'fork', 'Alice''s', 1, 5, 6);
		INSERT INTO robby_store_messages VALUES
		('alice', 'c', 1, '{"role":"user","content":"a1"}', NULL, 1),
		('alice', 'c', 2, NULL, 'failed', 2),
		('bob', 'c', 1, '{"role":"user","content":"b1"}', NULL, 3),
		('alice', 'fork', 1, '{"role":"user","content":"a1"}', NULL, 1)`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit())
	require.NoError(t, db.Close())

	s, err := Open(ctx, path)
	require.NoError(t, err)
	defer s.Close()
	storetest.CheckMigrated(t, s)
}
