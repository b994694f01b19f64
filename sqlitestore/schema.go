package sqlitestore

import (
	"context"

	"github.com/robby-go/robby/internal/convstore"
)

// migrations bring the schema from version i to i+1.
//
// Since version 2 a fork shares its messages with the conversation it came
// from. Each conversation writes to a segment of its own. It continues the
// segment holding its first base messages (parent). Refs counts what keeps a
// segment: its conversation, until deleted, and the segments that continue it.
// A segment no longer kept goes, with its messages, and releases its parent.
// Version 3 adds the conversations' metadata. Version 4 adds the usage of each
// message's model calls, and the conversations' totals. Version 5 adds the
// users' counters ([Store.AddCount]). Version 6 adds the agent that wrote
// each message (robby.Message.Agent).
// Version 7 adds the tasks ([robby.TaskStore]).
var migrations = []string{`
CREATE TABLE robby_store_conversations (
	user_id  TEXT NOT NULL,
	id       TEXT NOT NULL,
	title    TEXT NOT NULL,
	messages INTEGER NOT NULL,
	created  INTEGER NOT NULL, -- Unix microseconds
	updated  INTEGER NOT NULL,
	PRIMARY KEY (user_id, id)
);
CREATE INDEX robby_store_conversations_by_update ON robby_store_conversations (user_id, updated DESC, id DESC);
CREATE TABLE robby_store_messages (
	user_id         TEXT NOT NULL,
	conversation_id TEXT NOT NULL,
	seq             INTEGER NOT NULL,
	chat            BLOB,
	error           TEXT,
	created         INTEGER NOT NULL,
	PRIMARY KEY (user_id, conversation_id, seq)
);`, `
CREATE TABLE robby_store_segments (
	id      INTEGER PRIMARY KEY,
	user_id TEXT NOT NULL,
	parent  INTEGER, -- the segment this one continues, or NULL
	base    INTEGER NOT NULL, -- messages before this segment's first
	refs    INTEGER NOT NULL
);
ALTER TABLE robby_store_conversations ADD COLUMN segment INTEGER NOT NULL DEFAULT 0;
UPDATE robby_store_conversations SET segment = rowid;
INSERT INTO robby_store_segments (id, user_id, parent, base, refs)
	SELECT segment, user_id, NULL, 0, 1 FROM robby_store_conversations;
CREATE TABLE robby_store_segment_messages (
	segment INTEGER NOT NULL,
	seq     INTEGER NOT NULL, -- in the conversation, from 1
	chat    BLOB,
	error   TEXT,
	created INTEGER NOT NULL,
	PRIMARY KEY (segment, seq)
);
INSERT INTO robby_store_segment_messages (segment, seq, chat, error, created)
	SELECT c.segment, m.seq, m.chat, m.error, m.created
	FROM robby_store_messages m JOIN robby_store_conversations c ON c.user_id = m.user_id AND c.id = m.conversation_id;
DROP TABLE robby_store_messages;
ALTER TABLE robby_store_segment_messages RENAME TO robby_store_messages;`, `
ALTER TABLE robby_store_conversations ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'; -- a JSON object of strings`,
	usageColumns("robby_store_conversations") + usageColumns("robby_store_messages"), `
CREATE TABLE robby_store_counts (
	user_id      TEXT NOT NULL,
	name         TEXT NOT NULL,
	window_start INTEGER NOT NULL, -- Unix microseconds
	value        INTEGER NOT NULL,
	PRIMARY KEY (user_id, name, window_start)
);`, `
ALTER TABLE robby_store_messages ADD COLUMN agent TEXT NOT NULL DEFAULT '';`, `
CREATE TABLE robby_store_tasks (
	user_id    TEXT NOT NULL,
	id         TEXT NOT NULL,
	context_id TEXT NOT NULL,
	state      TEXT NOT NULL,
	data       BLOB NOT NULL, -- the task as its protocol writes it, in JSON
	version    INTEGER NOT NULL,
	created    INTEGER NOT NULL, -- Unix microseconds
	updated    INTEGER NOT NULL,
	PRIMARY KEY (user_id, id)
);
CREATE INDEX robby_store_tasks_by_update ON robby_store_tasks (user_id, updated DESC, id DESC);`}

// usageColumns returns the statements adding convstore.UsageColumns to a
// table.
func usageColumns(table string) string {
	return `
ALTER TABLE ` + table + ` ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ` + table + ` ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ` + table + ` ADD COLUMN total_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ` + table + ` ADD COLUMN cached_prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ` + table + ` ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ` + table + ` ADD COLUMN cost REAL NOT NULL DEFAULT 0;`
}

// migrate creates the tables or brings them to the current version.
func (s *Store) migrate(ctx context.Context) error {
	return s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		return convstore.Migrate(ctx, migrations,
			func(ctx context.Context, stmt string) error {
				_, err := tx.Tx.ExecContext(ctx, stmt) // once: not kept prepared
				return err
			},
			func(ctx context.Context, query string) (v int, err error) {
				err = tx.Tx.QueryRowContext(ctx, query).Scan(&v)
				return v, err
			})
	})
}
