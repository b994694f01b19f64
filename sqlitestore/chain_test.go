package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/storetest"
)

// TestLoadChainOf10000 loads the last of 10,000 responses, each continuing
// the one before, all but the last deleted: the walks up the chain (load,
// fork, release) have no depth limit. The chain is written as Fork, Append
// and Delete leave it, in one transaction to be quick.
func TestLoadChainOf10000(t *testing.T) {
	const k = 10000
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "chain.db"))
	require.NoError(t, err)
	defer s.Close()
	err = s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		var seg int64
		for i := range k {
			parent := seg
			if seg, err = newSegment(ctx, tx, "u", parent, int64(2*i)); err != nil {
				return err
			}
			// The response before is deleted (as Delete does): the tip
			// alone keeps the chain.
			if _, err := tx.ExecContext(ctx, `UPDATE robby_store_segments SET refs = refs - 1 WHERE id = ?`, parent); err != nil {
				return err
			}
			for j, text := range []string{fmt.Sprint("q", i), fmt.Sprint("a", i)} {
				chat := fmt.Sprintf(`{"content":%q,"role":"user"}`, text)
				if _, err := tx.ExecContext(ctx, `INSERT INTO robby_store_messages (segment, seq, chat, created) VALUES (?, ?, ?, 0)`,
					seg, 2*i+j+1, []byte(chat)); err != nil {
					return err
				}
			}
		}
		return insertConversation(ctx, tx, robby.Conversation{User: "u", ID: "tip", Messages: 2 * k}, seg)
	})
	require.NoError(t, err)
	storetest.CheckDeepChain(t, s, "u", "tip", k, func() int {
		var n int
		require.NoError(t, s.read.QueryRowContext(ctx, `SELECT count(*) FROM robby_store_messages`).Scan(&n))
		return n
	})
}
