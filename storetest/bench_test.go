package storetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/pgtest"
	"github.com/robby-go/robby/pgstore"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
	"github.com/robby-go/robby/storetest"
)

// A benchStore is a store to measure.
type benchStore struct {
	name string
	open func(b *testing.B) robby.Store
	// fill stores n empty conversations of user directly in the tables,
	// for a setup the API would take minutes for.
	fill func(b *testing.B, user string, n int)
}

// stores returns the stores to measure, each new and empty, SQLite in a
// file on disk, PostgreSQL in a new database of one server (started with
// fsync=off: its figures leave out the disk).
func stores(b *testing.B) []benchStore {
	srv := pgtest.Start(b)
	var path, dsn string
	return []benchStore{
		{"sqlite", func(b *testing.B) robby.Store {
			path = filepath.Join(b.TempDir(), "bench.db")
			s, err := sqlitestore.Open(context.Background(), path)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}, func(b *testing.B, user string, n int) {
			db, err := sql.Open("sqlite", path)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			_, err = db.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
				INSERT INTO robby_store_conversations (user_id, id, title, messages, created, updated)
				SELECT ?, ? || i, 'chat ' || i, 0, i, i FROM n`, n, user, user)
			if err != nil {
				b.Fatal(err)
			}
			_, err = db.Exec(`UPDATE robby_store_conversations SET segment = rowid WHERE user_id = ?;
				INSERT INTO robby_store_segments (id, user_id, parent, base, refs)
				SELECT segment, user_id, NULL, 0, 1 FROM robby_store_conversations WHERE user_id = ?`, user, user)
			if err != nil {
				b.Fatal(err)
			}
		}},
		{"postgres", func(b *testing.B) robby.Store {
			dsn = srv.NewDatabase(b)
			s, err := pgstore.Open(context.Background(), dsn)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}, func(b *testing.B, user string, n int) {
			conn, err := pgx.Connect(context.Background(), dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close(context.Background())
			_, err = conn.Exec(context.Background(), `INSERT INTO robby_store_conversations (user_id, id, title, messages, created, updated, segment)
				SELECT $1, $1 || i, 'chat ' || i, 0, to_timestamp(i), to_timestamp(i),
					nextval(pg_get_serial_sequence('robby_store_segments', 'id'))
				FROM generate_series(1, $2) AS i`, user, n)
			if err != nil {
				b.Fatal(err)
			}
			_, err = conn.Exec(context.Background(), `INSERT INTO robby_store_segments (id, user_id, parent, base, refs)
				SELECT segment, user_id, NULL, 0, 1 FROM robby_store_conversations WHERE user_id = $1`, user)
			if err != nil {
				b.Fatal(err)
			}
		}},
	}
}

// BenchmarkStoreTurn is a run of two turns (a tool call, then the answer:
// four messages saved) against robbytest, in memory and bound to a stored
// conversation; a new conversation every 10 runs. It reports the run's
// latency percentiles.
func BenchmarkStoreTurn(b *testing.B) {
	srv := robbytest.NewServer()
	defer srv.Close()
	add := robby.NewTool("add", "Add", func(ctx context.Context, in struct{ A, B int }) (int, error) { return in.A + in.B, nil })
	agent, err := robby.New(robby.WithBaseURL(srv.URL), robby.WithAPIKey("k"), robby.WithModel("m"), robby.WithTools(add))
	if err != nil {
		b.Fatal(err)
	}
	defer agent.Close()
	cases := []benchStore{{name: "memory"}}
	cases = append(cases, stores(b)...)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var store robby.Store
			if c.open != nil {
				store = c.open(b)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				srv.Reply(robbytest.ToolCalls(robbytest.Call("add", `{"A":1,"B":2}`)), robbytest.Text("3"))
				conv := agent.Clone()
				var opts []robby.RunOption
				if store != nil {
					opts = append(opts, robby.WithConversation(store, "u", fmt.Sprint(i/10)))
				}
				start := time.Now()
				if _, err := conv.Run(context.Background(), "What is 1+2?", opts...); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(p(0.5), "p50-µs")
	b.ReportMetric(p(0.99), "p99-µs")
}

// BenchmarkStoreLoad10k loads a conversation of 10,000 messages of about
// 200 bytes.
func BenchmarkStoreLoad10k(b *testing.B) {
	ctx := context.Background()
	for _, st := range stores(b) {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			if _, err := s.Create(ctx, robby.Conversation{User: "u", ID: "long"}); err != nil {
				b.Fatal(err)
			}
			batch := make([]robby.Message, 100)
			for i := range 100 {
				for j := range batch {
					batch[j] = storetest.Chat(fmt.Sprintf("message %d-%d %s", i, j, strings.Repeat("x", 150)))
				}
				if err := s.Append(ctx, "u", "long", int64(i*100), batch...); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				_, msgs, err := s.Load(ctx, "u", "long")
				if err != nil || len(msgs) != 10_000 {
					b.Fatal(len(msgs), err)
				}
			}
		})
	}
}

// BenchmarkStoreLoadConcurrent has 100 goroutines load conversations of six
// messages at once, as the Responses endpoint reads the previous response's
// under load: many more readers than cores.
func BenchmarkStoreLoadConcurrent(b *testing.B) {
	ctx := context.Background()
	for _, st := range stores(b) {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			for i := range 100 {
				msgs := make([]robby.Message, 6)
				for j := range msgs {
					msgs[j] = storetest.Chat(fmt.Sprintf("message %d of %d", j, i))
				}
				if _, err := s.Create(ctx, robby.Conversation{User: "u", ID: fmt.Sprint("c", i)}, msgs...); err != nil {
					b.Fatal(err)
				}
			}
			b.SetParallelism(100 / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					if _, msgs, err := s.Load(ctx, "u", fmt.Sprint("c", i%100)); err != nil || len(msgs) != 6 {
						b.Error(len(msgs), err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkStoreList100k lists the first page (100) and a page deep in,
// among 100,000 conversations of one user, next to 10,000 of another.
func BenchmarkStoreList100k(b *testing.B) {
	ctx := context.Background()
	for _, st := range stores(b) {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			st.fill(b, "u", 100_000)
			st.fill(b, "other", 10_000)
			_, deep, err := s.List(ctx, "u", robby.ListOptions{Limit: 50_000})
			if err != nil {
				b.Fatal(err)
			}
			for _, page := range []struct{ name, cursor string }{{"first", ""}, {"at50k", deep}} {
				b.Run(page.name, func(b *testing.B) {
					for range b.N {
						got, _, err := s.List(ctx, "u", robby.ListOptions{Cursor: page.cursor})
						if err != nil || len(got) != robby.DefaultListLimit {
							b.Fatal(len(got), err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkStoreConcurrent has 1,000 conversations written at once, each
// by its own goroutine appending one message at a time, 20 each: b.N
// rounds. It checks every message is stored once and reports messages a
// second.
func BenchmarkStoreConcurrent(b *testing.B) {
	ctx := context.Background()
	const convs, each = 1000, 20
	for _, st := range stores(b) {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			var elapsed time.Duration
			for round := range b.N {
				var g errgroup.Group
				ids := make([]string, convs)
				for i := range ids {
					ids[i] = fmt.Sprintf("r%d-c%d", round, i)
					if _, err := s.Create(ctx, robby.Conversation{User: "u", ID: ids[i]}); err != nil {
						b.Fatal(err)
					}
				}
				start := time.Now()
				for _, id := range ids {
					g.Go(func() error {
						for j := range each {
							if err := s.Append(ctx, "u", id, int64(j), storetest.Chat(fmt.Sprint(j))); err != nil {
								return err // "database is locked" would end here
							}
						}
						return nil
					})
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(start)
				for _, id := range ids {
					_, msgs, err := s.Load(ctx, "u", id)
					if err != nil || len(msgs) != each {
						b.Fatalf("%s: %d messages, %v", id, len(msgs), err)
					}
					for j, m := range msgs {
						if string(m.Chat) != string(storetest.Chat(fmt.Sprint(j)).Chat) {
							b.Fatalf("%s: message %d is %s", id, j+1, m.Chat)
						}
					}
				}
			}
			b.ReportMetric(float64(b.N*convs*each)/elapsed.Seconds(), "msgs/s")
		})
	}
}

// BenchmarkStoreContinue continues a chain of forks (what the Responses
// endpoint stores) at depth 10 and 1,000: fork the last conversation at
// its end and append a question and an answer. Sharing forked messages
// keeps it flat; a fork that copies grows with the depth.
func BenchmarkStoreContinue(b *testing.B) {
	ctx := context.Background()
	for _, st := range stores(b) {
		for _, depth := range []int{10, 1000} {
			b.Run(fmt.Sprintf("%s/depth=%d", st.name, depth), func(b *testing.B) {
				s := st.open(b)
				tip := storetest.ForkChain(b, s, "u", depth)
				at := int64(2 * depth)
				b.ResetTimer()
				for i := range b.N {
					f, err := s.Fork(ctx, robby.Conversation{User: "u"}, tip, at)
					if err != nil {
						b.Fatal(err)
					}
					if err := s.Append(ctx, "u", f.ID, at, storetest.Chat(fmt.Sprint("q", i)), storetest.Chat("a")); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStoreLoadChain loads the last of a chain of 1,000 forks (2,000
// messages, in 1,000 segments) and, as the baseline, one conversation of
// the same 2,000 messages.
func BenchmarkStoreLoadChain(b *testing.B) {
	ctx := context.Background()
	const k = 1000
	for _, st := range stores(b) {
		s := st.open(b)
		tip := storetest.ForkChain(b, s, "u", k)
		flat, err := s.Create(ctx, robby.Conversation{User: "u"})
		if err != nil {
			b.Fatal(err)
		}
		for i := range k {
			if err := s.Append(ctx, "u", flat.ID, int64(2*i), storetest.Chat(fmt.Sprint("q", i)), storetest.Chat(fmt.Sprint("a", i))); err != nil {
				b.Fatal(err)
			}
		}
		for _, c := range []struct{ name, id string }{{"flat", flat.ID}, {"chain", tip}} {
			b.Run(st.name+"/"+c.name, func(b *testing.B) {
				for range b.N {
					_, msgs, err := s.Load(ctx, "u", c.id)
					if err != nil || len(msgs) != 2*k {
						b.Fatal(len(msgs), err)
					}
				}
			})
		}
	}
}
