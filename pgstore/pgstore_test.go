package pgstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/pgtest"
	"github.com/robby-go/robby/pgstore"
	"github.com/robby-go/robby/storetest"
)

func open(t *testing.T, dsn string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestStore(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.Run(t, func(t *testing.T) robby.Store {
		return open(t, srv.NewDatabase(t))
	})
}

// TestOpenTogether has replicas start at once on a new database: one
// creates the schema, the others find it.
func TestOpenTogether(t *testing.T) {
	srv := pgtest.Start(t)
	dsn := srv.NewDatabase(t)
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			s, err := pgstore.Open(context.Background(), dsn)
			if assert.NoError(t, err) {
				s.Close()
			}
		})
	}
	wg.Wait()

	// A schema newer than the program's is refused, not damaged.
	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), `UPDATE robby_store_schema SET version = 99`)
	require.NoError(t, err)
	_, err = pgstore.Open(context.Background(), dsn)
	assert.ErrorContains(t, err, "schema version 99 is newer")
}

func TestCrash(t *testing.T) {
	kills := 200
	if testing.Short() {
		kills = 20
	}
	storetest.Crash(t, kills, func(t *testing.T) string {
		return pgtest.Start(t).NewDatabase(t)
	}, func(t *testing.T, dsn string) robby.Store {
		return open(t, dsn)
	})
}

// TestForkChainStorage has a chain of 1,000 forks, each adding two
// messages: the database holds 2,000 messages, not a million.
func TestForkChainStorage(t *testing.T) {
	const k = 1000
	dsn := pgtest.Start(t).NewDatabase(t)
	s := open(t, dsn)
	tip := storetest.ForkChain(t, s, "u", k)
	_, msgs, err := s.Load(context.Background(), "u", tip)
	require.NoError(t, err)
	require.Len(t, msgs, 2*k)
	assert.JSONEq(t, `{"content":"a999","role":"user"}`, string(msgs[2*k-1].Chat))

	conn, err := pgx.Connect(context.Background(), dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var rows int
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT count(*) FROM robby_store_messages`).Scan(&rows))
	assert.Equal(t, 2*k, rows)
}
