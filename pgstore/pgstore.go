// Package pgstore is a [robby.Store] in PostgreSQL, through
// github.com/jackc/pgx/v5, for servers whose replicas share conversations.
//
// [Open] creates the store's tables, or migrates them to this version's schema,
// itself. Replicas starting together take turns (an advisory lock). The tables
// are named robby_store_*, so the database can hold an application's own beside
// them. Messages are kept in a json column, as they were given. They can so be
// queried with PostgreSQL's JSON operators.
package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/convstore"
)

// A Store is a [robby.Store] in a PostgreSQL database. It is safe for
// concurrent use, and any number of processes may share the database.
type Store struct {
	pool *pgxpool.Pool
}

var _ robby.Store = (*Store)(nil)

// Open connects to the database that connString names, sets up the store's
// tables and returns the store. connString is a URL or key=value string, as pgx
// takes: "postgres://user@host/db". Close it when done.
func Open(ctx context.Context, connString string) (*Store, error) {
	pool, err := pgxpool.New(ctx, connString)
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	s := &Store{pool: pool}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("setting up the tables: %w", err)
	}
	return s, nil
}

// Close closes the store's connections.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

const conversationColumns = `id, user_id, title, metadata, messages, created, updated, ` + convstore.UsageColumns

// scanConversation reads conversationColumns, then the extra columns
// asked for.
func scanConversation(row pgx.Row, extra ...any) (robby.Conversation, error) {
	var c robby.Conversation
	var md string
	dest := append([]any{&c.ID, &c.User, &c.Title, &md, &c.Messages, &c.Created, &c.Updated}, (*convstore.Usage)(&c.Usage).Dest()...)
	err := row.Scan(append(dest, extra...)...)
	if err != nil {
		return c, err
	}
	c.Created, c.Updated = c.Created.UTC(), c.Updated.UTC()
	c.Metadata, err = convstore.DecodeMetadata(md)
	return c, err
}

// querier is a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Create implements [robby.Store]: one statement stores the conversation,
// its segment and msgs, in one round trip.
func (s *Store) Create(ctx context.Context, c robby.Conversation, msgs ...robby.Message) (robby.Conversation, error) {
	if err := checkMessages(msgs); err != nil {
		return robby.Conversation{}, err
	}
	if c.ID == "" {
		c.ID = convstore.NewID()
	}
	c.Messages, c.Usage = 0, robby.Usage{}
	c.Metadata = maps.Clone(c.Metadata)
	c.Created = convstore.Now()
	c.Updated = c.Created
	c = counted(c, msgs)
	args := append(append([]any{c.ID, c.User, c.Title, convstore.EncodeMetadata(c.Metadata), c.Messages, c.Created, c.Updated},
		convstore.Usage(c.Usage).Args()...), messageArrays(msgs)...)
	_, err := s.pool.Exec(ctx, `WITH s AS (
			INSERT INTO robby_store_segments (user_id, parent, base, refs) VALUES ($2, NULL, 0, 1) RETURNING id
		), c AS (
			INSERT INTO robby_store_conversations (`+conversationColumns+`, segment)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, (SELECT id FROM s)) RETURNING segment
		)
		INSERT INTO robby_store_messages (segment, seq, chat, error, agent, created, `+convstore.UsageColumns+`)
		SELECT c.segment, m.ord, m.chat::json, m.error, m.agent, $6, m.p, m.c, m.t, m.cp, m.r, m.cost
		FROM c, `+unnestMessages(14), args...)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == uniqueViolation {
		return robby.Conversation{}, fmt.Errorf("conversation %q: %w", c.ID, robby.ErrConversationExists)
	}
	if err != nil {
		return robby.Conversation{}, err
	}
	return c, nil
}

// uniqueViolation is PostgreSQL's error code for a key stored already.
const uniqueViolation = "23505"

// counted is c once msgs were appended to it.
func counted(c robby.Conversation, msgs []robby.Message) robby.Conversation {
	c.Messages += int64(len(msgs))
	c.Usage = c.Usage.Add(convstore.SumUsage(msgs, usageOf))
	return c
}

// usageOf is a message's usage.
func usageOf(m robby.Message) robby.Usage { return m.Usage }

// checkMessages checks messages to store.
func checkMessages(msgs []robby.Message) error {
	return convstore.CheckMessages(msgs, func(m robby.Message) (json.RawMessage, string, convstore.Usage) {
		return m.Chat, m.Error, convstore.Usage(m.Usage)
	})
}

// chain is the segments that hold messages 1 to hi of a conversation, from
// segment seg up. The query's arguments are seg and hi. Each segment holds the
// messages after lo up to hi. Each step up is a lookup (see chainUp).
const chain = `WITH RECURSIVE chain(segment, parent, lo, hi) AS (
	SELECT id, parent, base, $2::bigint FROM robby_store_segments WHERE id = $1
	` + chainUp

// conversationChain is chain from the segment of a conversation up, to the
// messages it counts. The query's arguments are the user and the
// conversation's ID.
const conversationChain = `WITH RECURSIVE chain(segment, parent, lo, hi) AS (
	SELECT s.id, s.parent, s.base, c.messages FROM robby_store_conversations c
		JOIN robby_store_segments s ON s.id = c.segment WHERE c.user_id = $1 AND c.id = $2
	` + chainUp

// chainUp is the recursive step of the chains. Here, in Load and in Fork,
// each step up is a subquery with a LIMIT, which the planner keeps apart. So
// each step is an index lookup, whatever the statistics say. A fresh table's
// statistics would have it scan the table at every step.
const chainUp = `UNION ALL
	SELECT s.id, s.parent, s.base, chain.lo FROM chain, LATERAL (
		SELECT id, parent, base FROM robby_store_segments WHERE id = chain.parent LIMIT 1
	) s
) `

// sumUsage sums convstore.UsageColumns of messages m.
// A count's sum (numeric) stops at the largest bigint, as robby.Usage.Add
// does, rather than fail the cast.
const sumUsage = `least(coalesce(sum(m.prompt_tokens), 0), ` + maxBigint + `)::bigint,
	least(coalesce(sum(m.completion_tokens), 0), ` + maxBigint + `)::bigint,
	least(coalesce(sum(m.total_tokens), 0), ` + maxBigint + `)::bigint,
	least(coalesce(sum(m.cached_prompt_tokens), 0), ` + maxBigint + `)::bigint,
	least(coalesce(sum(m.reasoning_tokens), 0), ` + maxBigint + `)::bigint, coalesce(sum(m.cost), 0)`

// maxBigint is the largest count a conversation's usage sums to.
const maxBigint = "9223372036854775807"

// getConversation returns a conversation.
func getConversation(ctx context.Context, q querier, user, id string) (robby.Conversation, error) {
	return scanExisting(id, q.QueryRow(ctx, `SELECT `+conversationColumns+`
		FROM robby_store_conversations WHERE user_id = $1 AND id = $2`, user, id))
}

// scanExisting reads conversation id as scanConversation does. A
// conversation that is not there is robby.ErrNoConversation.
func scanExisting(id string, row pgx.Row, extra ...any) (robby.Conversation, error) {
	c, err := scanConversation(row, extra...)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fmt.Errorf("conversation %q: %w", id, robby.ErrNoConversation)
	}
	return c, err
}

// Load implements [robby.Store]. It reads from one snapshot, so the messages
// are those the conversation counts. They are its segment's, and those before
// each fork up the chain of segments it continues. Each segment's are an index
// range. OFFSET 0 keeps the subquery a lookup a segment (see chainUp). The
// transaction and its two queries go in one round trip.
func (s *Store) Load(ctx context.Context, user, id string) (robby.Conversation, []robby.Message, error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`)
	b.Queue(`SELECT `+conversationColumns+` FROM robby_store_conversations WHERE user_id = $1 AND id = $2`, user, id)
	b.Queue(conversationChain+`SELECT m.* FROM chain, LATERAL (
			SELECT seq, chat, error, agent, created, `+convstore.UsageColumns+` FROM robby_store_messages
			WHERE segment = chain.segment AND seq > chain.lo AND seq <= chain.hi OFFSET 0
		) m
		ORDER BY m.seq`, user, id)
	b.Queue(`COMMIT`)
	br := s.pool.SendBatch(ctx, b)
	c, msgs, err := loadResults(br, id)
	if err := errors.Join(err, br.Close()); err != nil {
		return robby.Conversation{}, nil, err
	}
	return c, msgs, nil
}

// loadResults reads the results of Load's batch for conversation id.
func loadResults(br pgx.BatchResults, id string) (robby.Conversation, []robby.Message, error) {
	if _, err := br.Exec(); err != nil {
		return robby.Conversation{}, nil, err
	}
	c, err := scanExisting(id, br.QueryRow())
	if err != nil {
		return c, nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return c, nil, err
	}
	msgs := make([]robby.Message, 0, c.Messages)
	var m robby.Message
	var errText *string
	dest := append([]any{&m.Seq, (*[]byte)(&m.Chat), &errText, &m.Agent, &m.Created}, (*convstore.Usage)(&m.Usage).Dest()...)
	_, err = pgx.ForEachRow(rows, dest, func() error {
		if errText != nil {
			m.Error = *errText
		}
		m.Created = m.Created.UTC()
		msgs = append(msgs, m)
		m = robby.Message{}
		return nil
	})
	if err != nil {
		return c, nil, err
	}
	_, err = br.Exec()
	return c, msgs, err
}

// Append implements [robby.Store]: one statement counts the messages and
// inserts them, if the conversation holds after.
func (s *Store) Append(ctx context.Context, user, id string, after int64, msgs ...robby.Message) error {
	if err := checkMessages(msgs); err != nil {
		return err
	}
	return appendTo(ctx, s.pool, user, id, after, msgs, convstore.Now())
}

// messageArrays returns the columns of msgs as arrays, the arguments of
// unnestMessages: chat, error, each of convstore.UsageColumns, and agent.
func messageArrays(msgs []robby.Message) []any {
	chats, errs, agents := make([]*string, len(msgs)), make([]*string, len(msgs)), make([]string, len(msgs))
	var tokens [5][]int64 // each of convstore.UsageColumns but cost, by message
	for j := range tokens {
		tokens[j] = make([]int64, 0, len(msgs))
	}
	costs := make([]float64, len(msgs))
	for i, m := range msgs {
		if m.Chat != nil {
			chat := string(m.Chat)
			chats[i] = &chat
		} else {
			errs[i] = &msgs[i].Error
		}
		agents[i] = m.Agent
		u := m.Usage
		for j, n := range [5]int64{u.PromptTokens, u.CompletionTokens, u.TotalTokens, u.CachedPromptTokens, u.ReasoningTokens} {
			tokens[j] = append(tokens[j], n)
		}
		costs[i] = u.Cost
	}
	return []any{chats, errs, tokens[0], tokens[1], tokens[2], tokens[3], tokens[4], costs, agents}
}

// unnestMessages is the rows of messageArrays, given as arguments from $first
// on, as m(chat, error, p, c, t, cp, r, cost, agent, ord).
func unnestMessages(first int) string {
	return fmt.Sprintf(`unnest($%d::text[], $%d::text[], $%d::bigint[], $%d::bigint[], $%d::bigint[], $%d::bigint[],
		$%d::bigint[], $%d::float8[], $%d::text[]) WITH ORDINALITY AS m(chat, error, p, c, t, cp, r, cost, agent, ord)`,
		first, first+1, first+2, first+3, first+4, first+5, first+6, first+7, first+8)
}

// appendTo stores msgs at the end of a conversation that holds after. With
// no msgs, it marks the conversation updated, if it holds after.
func appendTo(ctx context.Context, q querier, user, id string, after int64, msgs []robby.Message, now time.Time) error {
	args := append(append([]any{user, id, after, len(msgs), now}, convstore.Usage(convstore.SumUsage(msgs, usageOf)).Args()...),
		messageArrays(msgs)...)
	tag, err := q.Exec(ctx, `WITH c AS (
			UPDATE robby_store_conversations SET messages = messages + $4, updated = $5,
				prompt_tokens = least(prompt_tokens::numeric + $6, `+maxBigint+`)::bigint,
				completion_tokens = least(completion_tokens::numeric + $7, `+maxBigint+`)::bigint,
				total_tokens = least(total_tokens::numeric + $8, `+maxBigint+`)::bigint,
				cached_prompt_tokens = least(cached_prompt_tokens::numeric + $9, `+maxBigint+`)::bigint,
				reasoning_tokens = least(reasoning_tokens::numeric + $10, `+maxBigint+`)::bigint, cost = cost + $11
			WHERE user_id = $1 AND id = $2 AND messages = $3 RETURNING segment
		)
		INSERT INTO robby_store_messages (segment, seq, chat, error, agent, created, `+convstore.UsageColumns+`)
		SELECT c.segment, $3 + m.ord, m.chat::json, m.error, m.agent, $5, m.p, m.c, m.t, m.cp, m.r, m.cost
		FROM c, `+unnestMessages(12), args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == int64(len(msgs)) && len(msgs) > 0 {
		return nil
	}
	c, err := getConversation(ctx, q, user, id)
	if err == nil && c.Messages != after {
		err = fmt.Errorf("conversation %q holds %d messages, not %d: %w", id, c.Messages, after, robby.ErrConflict)
	}
	return err
}

// List implements [robby.Store].
func (s *Store) List(ctx context.Context, user string, opts robby.ListOptions) ([]robby.Conversation, string, error) {
	cur, ok, err := convstore.DecodeCursor(opts.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := convstore.Limit(opts.Limit, robby.DefaultListLimit)
	var rows pgx.Rows
	if ok {
		rows, err = s.pool.Query(ctx, `SELECT `+conversationColumns+` FROM robby_store_conversations
			WHERE user_id = $1 AND (updated, id) < ($2, $3) ORDER BY updated DESC, id DESC LIMIT $4`,
			user, cur.Updated, cur.ID, limit+1)
	} else {
		rows, err = s.pool.Query(ctx, `SELECT `+conversationColumns+` FROM robby_store_conversations
			WHERE user_id = $1 ORDER BY updated DESC, id DESC LIMIT $2`, user, limit+1)
	}
	if err != nil {
		return nil, "", err
	}
	page, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (robby.Conversation, error) {
		return scanConversation(row)
	})
	if err != nil {
		return nil, "", err
	}
	page, next := convstore.Page(page, limit, func(c robby.Conversation) convstore.Cursor {
		return convstore.Cursor{Updated: c.Updated, ID: c.ID}
	})
	return page, next, nil
}

// SetTitle implements [robby.Store].
func (s *Store) SetTitle(ctx context.Context, user, id, title string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE robby_store_conversations SET title = $3, updated = $4
		WHERE user_id = $1 AND id = $2`, user, id, title, convstore.Now())
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("conversation %q: %w", id, robby.ErrNoConversation)
	}
	return err
}

// SetMetadata implements [robby.Store].
func (s *Store) SetMetadata(ctx context.Context, user, id string, md map[string]string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE robby_store_conversations SET metadata = $3, updated = $4
		WHERE user_id = $1 AND id = $2`, user, id, convstore.EncodeMetadata(md), convstore.Now())
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("conversation %q: %w", id, robby.ErrNoConversation)
	}
	return err
}

// Delete implements [robby.Store]. Messages that forks share stay until
// the last of those goes.
func (s *Store) Delete(ctx context.Context, user, id string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var seg int64
		err := tx.QueryRow(ctx, `DELETE FROM robby_store_conversations WHERE user_id = $1 AND id = $2
			RETURNING segment`, user, id).Scan(&seg)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("conversation %q: %w", id, robby.ErrNoConversation)
		}
		if err != nil {
			return err
		}
		return release(ctx, tx, seg)
	})
}
