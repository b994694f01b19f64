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

func TestCounts(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.RunCounts(t, func(t *testing.T) storetest.Counter {
		return open(t, srv.NewDatabase(t))
	})
}

func TestTasks(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.RunTasks(t, func(t *testing.T) robby.TaskStore {
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

// TestForkChainGrowsLinearlyOnDisk stores chains of 100 and 200 responses
// (a 500-byte prompt and answer each) in databases of their own: twice the
// chain takes about twice the space, not four times (a fork copied its
// history: 8.0 MB and 31.6 MB; now about 0.34 and 0.58 MB).
func TestForkChainGrowsLinearlyOnDisk(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t)
	size := map[int]int64{}
	for _, k := range []int{100, 200} {
		dsn := srv.NewDatabase(t)
		storetest.ForkChainSized(t, open(t, dsn), "u", k, 500)
		conn, err := pgx.Connect(ctx, dsn)
		require.NoError(t, err)
		var n int64
		require.NoError(t, conn.QueryRow(ctx, `SELECT sum(pg_total_relation_size(oid))::bigint FROM pg_class
			WHERE relname LIKE 'robby\_store\_%' AND relkind = 'r'`).Scan(&n))
		conn.Close(ctx)
		size[k] = n
	}
	t.Logf("a chain of 100 responses: %d bytes; of 200: %d bytes", size[100], size[200])
	assert.Less(t, float64(size[200])/float64(size[100]), 2.5, "linear, not quadratic")
}

// TestLoadChainOf10000 loads the last of 10,000 responses, each continuing
// the one before, all but the last deleted: the walks up the chain (load,
// fork, release) have no depth limit. The chain is written as Fork, Append
// and Delete leave it, by three statements to be quick.
func TestLoadChainOf10000(t *testing.T) {
	const k = 10000
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	s := open(t, dsn)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
		INSERT INTO robby_store_segments (id, user_id, parent, base, refs)
			SELECT i, 'u', NULLIF(i - 1, 0), 2 * (i - 1), 1 FROM generate_series(1, 10000) i;
		SELECT setval(pg_get_serial_sequence('robby_store_segments', 'id'), 10000);
		INSERT INTO robby_store_messages (segment, seq, chat, created)
			SELECT i, 2 * i - 1 + j, json_build_object('content', (CASE j WHEN 0 THEN 'q' ELSE 'a' END) || (i - 1), 'role', 'user'), now()
			FROM generate_series(1, 10000) i, generate_series(0, 1) j;
		INSERT INTO robby_store_conversations (user_id, id, title, messages, created, updated, segment)
			VALUES ('u', 'tip', '', 20000, now(), now(), 10000)`)
	require.NoError(t, err)
	storetest.CheckDeepChain(t, s, "u", "tip", k, func() int {
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM robby_store_messages`).Scan(&n))
		return n
	})
}
