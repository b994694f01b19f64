package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
	"github.com/robby-go/robby/storetest"
)

func open(t *testing.T, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) robby.Store {
		return open(t, filepath.Join(t.TempDir(), "robby.db"))
	})
}

// TestTwoProcesses has processes (this test binary again) write to one
// file at once, each to its own conversations and all to a shared one:
// none sees "database is locked", nothing is lost or stored twice.
func TestTwoProcesses(t *testing.T) {
	if path := os.Getenv("SQLITESTORE_CHILD"); path != "" {
		writeAsChild(t, path, os.Getenv("SQLITESTORE_NAME"))
		return
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	s := open(t, path)
	_, err := s.Create(context.Background(), robby.Conversation{User: "u", ID: "shared"})
	require.NoError(t, err)
	var wg sync.WaitGroup
	names := []string{"p1", "p2", "p3"}
	for _, name := range names {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestTwoProcesses$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SQLITESTORE_CHILD="+path, "SQLITESTORE_NAME="+name)
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "%s:\n%s", name, out)
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	_, msgs, err := s.Load(context.Background(), "u", "shared")
	require.NoError(t, err)
	require.Len(t, msgs, len(names)*childWrites)
	for _, m := range msgs {
		assert.False(t, seen[string(m.Chat)], "%s twice", m.Chat)
		seen[string(m.Chat)] = true
	}
	for _, name := range names {
		_, msgs, err := s.Load(context.Background(), "u", name)
		require.NoError(t, err)
		assert.Len(t, msgs, childWrites)
	}
}

const childWrites = 100

func writeAsChild(t *testing.T, path, name string) {
	ctx := context.Background()
	s := open(t, path)
	_, err := s.Create(ctx, robby.Conversation{User: "u", ID: name})
	require.NoError(t, err)
	for i := range childWrites {
		require.NoError(t, s.Append(ctx, "u", name, int64(i), storetest.Chat(fmt.Sprint(i))))
		for {
			c, _, err := s.Load(ctx, "u", "shared")
			require.NoError(t, err)
			err = s.Append(ctx, "u", "shared", c.Messages, storetest.Chat(fmt.Sprintf("%s-%d", name, i)))
			if !errors.Is(err, robby.ErrConflict) {
				require.NoError(t, err)
				break
			}
		}
	}
}

// TestOpenTogether has stores open a new file at once: one creates the
// schema, the others find it.
func TestOpenTogether(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			s, err := sqlitestore.Open(context.Background(), path)
			if assert.NoError(t, err) {
				s.Close()
			}
		})
	}
	wg.Wait()

	// A schema newer than the program's is refused, not damaged.
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`UPDATE robby_store_schema SET version = 99`)
	require.NoError(t, err)
	_, err = sqlitestore.Open(context.Background(), path)
	assert.ErrorContains(t, err, "schema version 99 is newer")
}

func TestCrash(t *testing.T) {
	kills := 200
	if testing.Short() {
		kills = 20
	}
	storetest.Crash(t, kills, func(t *testing.T) string {
		return filepath.Join(t.TempDir(), "crash.db")
	}, func(t *testing.T, path string) robby.Store {
		return open(t, path)
	})
}

// TestForkChainStorage has a chain of 1,000 forks, each adding two
// messages: the file holds 2,000 messages, not a million.
func TestForkChainStorage(t *testing.T) {
	const k = 1000
	path := filepath.Join(t.TempDir(), "chain.db")
	s := open(t, path)
	tip := storetest.ForkChain(t, s, "u", k)
	_, msgs, err := s.Load(context.Background(), "u", tip)
	require.NoError(t, err)
	require.Len(t, msgs, 2*k)
	assert.Equal(t, `{"content":"a999","role":"user"}`, string(msgs[2*k-1].Chat))

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var rows int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM robby_store_messages`).Scan(&rows))
	assert.Equal(t, 2*k, rows)
}

// A path is a path: "what?.db" and "what?x.db" are two files, neither of
// them "what" (the driver read the '?' as a URI's query, and '#' as its
// fragment, so two paths shared one file).
func TestPathIsNotAURI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, names := range [][2]string{{"what?.db", "what?x.db"}, {"notes#1.db", "notes#2.db"}, {"100%25.db", "100%.db"}} {
		a := open(t, filepath.Join(dir, names[0]))
		b := open(t, filepath.Join(dir, names[1]))
		_, err := a.Create(ctx, robby.Conversation{User: "u", ID: "c"})
		require.NoError(t, err)
		_, err = b.Create(ctx, robby.Conversation{User: "u", ID: "c"})
		require.NoError(t, err, "%s and %s are two stores", names[0], names[1])
		for _, name := range names {
			_, err := os.Stat(filepath.Join(dir, name))
			assert.NoError(t, err, "%s is written to itself", name)
		}
	}
	for _, stray := range []string{"what", "notes"} {
		_, err := os.Stat(filepath.Join(dir, stray))
		assert.ErrorIs(t, err, os.ErrNotExist, "nothing is written to %s", stray)
	}
}

// TestForkChainGrowsLinearlyOnDisk stores chains of 100 and 200 responses
// (a 500-byte prompt and answer each) in files of their own: twice the
// chain takes about twice the file, not four times (a fork copied its
// history: 7.4 MB and 29.4 MB; now about 0.2 and 0.35 MB).
func TestForkChainGrowsLinearlyOnDisk(t *testing.T) {
	size := map[int]int64{}
	for _, k := range []int{100, 200} {
		path := filepath.Join(t.TempDir(), "chain.db")
		s, err := sqlitestore.Open(context.Background(), path)
		require.NoError(t, err)
		storetest.ForkChainSized(t, s, "u", k, 500)
		require.NoError(t, s.Close())
		fi, err := os.Stat(path)
		require.NoError(t, err)
		size[k] = fi.Size()
	}
	t.Logf("a chain of 100 responses: %d bytes; of 200: %d bytes", size[100], size[200])
	assert.Less(t, float64(size[200])/float64(size[100]), 2.5, "linear, not quadratic")
	assert.Less(t, size[200], int64(200*2*1000), "about the messages' own size")
}

// TestConflictSaysRobbyOnce: an error that the root made (ErrConflict),
// which crossed the store and a run, says "robby:" once. Each wrap on the
// way added what it was doing.
func TestConflictSaysRobbyOnce(t *testing.T) {
	ctx := t.Context()
	store := open(t, filepath.Join(t.TempDir(), "robby.db"))
	// The tool is another writer: it adds to the conversation while the
	// run holds its turn unsaved.
	other := robby.FuncTool("other_writer", "", nil, func(ctx context.Context, _ map[string]any) (any, error) {
		c, _, err := store.Load(ctx, "u", "c")
		if err != nil {
			return nil, err
		}
		return "written", store.Append(ctx, "u", "c", c.Messages, storetest.Chat("meanwhile"))
	})
	model := robbytest.NewServer()
	t.Cleanup(model.Close)
	model.Reply(robbytest.ToolCalls(robbytest.Call("other_writer", `{}`)), robbytest.Text("done"))
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"), robby.WithTools(other))
	require.NoError(t, err)
	t.Cleanup(func() { agent.Close() })

	_, err = agent.Run(ctx, "hi", robby.WithConversation(store, "u", "c"))
	require.ErrorIs(t, err, robby.ErrConflict)
	t.Log(err)
	assert.Equal(t, 1, strings.Count(err.Error(), "robby:"), err.Error())
	assert.True(t, strings.HasPrefix(err.Error(), `saving to conversation "c": `), err.Error())
	assert.True(t, strings.HasSuffix(err.Error(), robby.ErrConflict.Error()), err.Error())
}

func TestCounts(t *testing.T) {
	storetest.RunCounts(t, func(t *testing.T) storetest.Counter {
		return open(t, filepath.Join(t.TempDir(), "robby.db"))
	})
}

func TestTasks(t *testing.T) {
	storetest.RunTasks(t, func(t *testing.T) robby.TaskStore {
		return open(t, filepath.Join(t.TempDir(), "robby.db"))
	})
}
