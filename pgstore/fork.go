package pgstore

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/convstore"
)

// Fork implements [robby.Store]. The fork shares the first n messages
// with the conversation: it stores none of them again. A fork at the
// conversation's last message (a response continuing the one before) is one
// statement, in one round trip: forkAtEnd. Any other, or one that forkAtEnd
// did not write, is a transaction. It reads the conversation and the segment
// holding message n (its parent: the segment itself or one it continues, so
// that a chain of segments holds no segment a fork skips) in one statement,
// and writes the fork, its segment and msgs in another.
func (s *Store) Fork(ctx context.Context, c robby.Conversation, from string, n int64, msgs ...robby.Message) (robby.Conversation, error) {
	if err := checkMessages(msgs); err != nil {
		return robby.Conversation{}, err
	}
	if c.ID == "" {
		c.ID = convstore.NewID()
	}
	c.Messages, c.Usage = n, robby.Usage{}
	c.Metadata = maps.Clone(c.Metadata)
	c.Created = convstore.Now()
	c.Updated = c.Created
	forked, ok, err := s.forkAtEnd(ctx, c, from, msgs)
	if err == nil && !ok {
		forked, err = s.forkIn(ctx, c, from, n, msgs)
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == uniqueViolation {
		return robby.Conversation{}, fmt.Errorf("conversation %q: %w", c.ID, robby.ErrConversationExists)
	}
	if err != nil {
		return robby.Conversation{}, err
	}
	return forked, nil
}

// forkAtEnd writes c, a fork of conversation from at its last message,
// c.Messages, in one statement. It reads nothing first: the statement locks
// the conversation, and writes only if it holds c.Messages messages, at least
// one. The fork's usage is then the conversation's, plus msgs'. It reports
// whether it wrote the fork; when it did not, Fork's transaction finds why.
func (s *Store) forkAtEnd(ctx context.Context, c robby.Conversation, from string, msgs []robby.Message) (robby.Conversation, bool, error) {
	if c.Messages == 0 {
		return c, false, nil
	}
	sum := convstore.Usage(convstore.SumUsage(msgs, usageOf)).Args()
	args := append(append([]any{c.ID, c.User, c.Title, convstore.EncodeMetadata(c.Metadata), c.Messages + int64(len(msgs)),
		c.Created, c.Updated}, sum...), append(messageArrays(msgs), from, c.Messages)...)
	var u robby.Usage
	err := s.pool.QueryRow(ctx, `WITH src AS (
			SELECT `+convstore.UsageColumns+`, (`+segmentOf(24)+`) AS parent
			FROM robby_store_conversations c WHERE user_id = $2 AND id = $23 AND messages = $24 FOR SHARE
		), s AS (
			INSERT INTO robby_store_segments (user_id, parent, base, refs) SELECT $2, parent, $24, 1 FROM src RETURNING id
		), r AS (
			UPDATE robby_store_segments SET refs = refs + 1 WHERE id = (SELECT parent FROM src)
		), c AS (
			INSERT INTO robby_store_conversations (`+conversationColumns+`, segment)
			SELECT $1, $2, $3, $4, $5, $6, $7,
				least(src.prompt_tokens::numeric + $8, `+maxBigint+`)::bigint,
				least(src.completion_tokens::numeric + $9, `+maxBigint+`)::bigint,
				least(src.total_tokens::numeric + $10, `+maxBigint+`)::bigint,
				least(src.cached_prompt_tokens::numeric + $11, `+maxBigint+`)::bigint,
				least(src.reasoning_tokens::numeric + $12, `+maxBigint+`)::bigint, src.cost + $13, s.id
			FROM src, s RETURNING segment, `+convstore.UsageColumns+`
		), m AS (
			INSERT INTO robby_store_messages (segment, seq, chat, error, agent, created, `+convstore.UsageColumns+`)
			SELECT c.segment, $24 + m.ord, m.chat::json, m.error, m.agent, $6, m.p, m.c, m.t, m.cp, m.r, m.cost
			FROM c, `+unnestMessages(14)+`
		)
		SELECT `+convstore.UsageColumns+` FROM c`, args...).Scan((*convstore.Usage)(&u).Dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	c.Messages += int64(len(msgs))
	c.Usage = u
	return c, true, nil
}

// segmentOf is the segment holding message $n of conversation c: its own
// segment or one up the chain it continues. It is NULL when $n is 0.
func segmentOf(n int) string {
	return fmt.Sprintf(`WITH RECURSIVE up(id, parent, base) AS (
		SELECT id, parent, base FROM robby_store_segments WHERE id = c.segment
		UNION ALL
		SELECT s.id, s.parent, s.base FROM up, LATERAL (
			SELECT id, parent, base FROM robby_store_segments WHERE id = up.parent LIMIT 1
		) s WHERE up.base >= $%[1]d
	)
	SELECT id FROM up WHERE base < $%[1]d`, n)
}

// forkIn writes c, a fork of conversation from at message n, in a
// transaction that reads the conversation first.
func (s *Store) forkIn(ctx context.Context, c robby.Conversation, from string, n int64, msgs []robby.Message) (robby.Conversation, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var parent *int64 // the segment holding message n; nil when n is 0
		src, err := scanExisting(from, tx.QueryRow(ctx, `SELECT `+conversationColumns+`, (`+segmentOf(3)+`)
			FROM robby_store_conversations c WHERE user_id = $1 AND id = $2 FOR SHARE`, c.User, from, n), &parent)
		if err != nil {
			return err
		}
		if err := convstore.CheckFork(src.ID, src.Messages, n); err != nil {
			return err
		}
		if parent != nil {
			if c.Usage, err = usageUpTo(ctx, tx, src, *parent, n); err != nil {
				return err
			}
		}
		c = counted(c, msgs)
		args := append(append([]any{c.ID, c.User, c.Title, convstore.EncodeMetadata(c.Metadata), c.Messages, c.Created, c.Updated},
			convstore.Usage(c.Usage).Args()...), append(messageArrays(msgs), parent, n)...)
		_, err = tx.Exec(ctx, `WITH s AS (
				INSERT INTO robby_store_segments (user_id, parent, base, refs) VALUES ($2, $23, $24, 1) RETURNING id
			), r AS (
				UPDATE robby_store_segments SET refs = refs + 1 WHERE id = $23
			), c AS (
				INSERT INTO robby_store_conversations (`+conversationColumns+`, segment)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, (SELECT id FROM s)) RETURNING segment
			)
			INSERT INTO robby_store_messages (segment, seq, chat, error, agent, created, `+convstore.UsageColumns+`)
			SELECT c.segment, $24 + m.ord, m.chat::json, m.error, m.agent, $6, m.p, m.c, m.t, m.cp, m.r, m.cost
			FROM c, `+unnestMessages(14), args...)
		return err
	})
	return c, err
}

// usageUpTo sums the usage of the first n messages of conversation src.
// Segment seg holds message n (the parent Fork finds).
func usageUpTo(ctx context.Context, q querier, src robby.Conversation, seg, n int64) (robby.Usage, error) {
	if n == src.Messages {
		return src.Usage, nil
	}
	var u robby.Usage
	err := q.QueryRow(ctx, chain+`SELECT `+sumUsage+` FROM chain, LATERAL (
			SELECT `+convstore.UsageColumns+` FROM robby_store_messages
			WHERE segment = chain.segment AND seq > chain.lo AND seq <= chain.hi OFFSET 0
		) m`, seg, n).Scan((*convstore.Usage)(&u).Dest()...)
	return u, err
}
