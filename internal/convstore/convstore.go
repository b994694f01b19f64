// Package convstore holds what the SQL implementations of robby.Store
// share: checks of their input, IDs, times and list cursors.
package convstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/robby-go/robby"
)

// NewID returns a random conversation ID: 26 characters, 128 bits.
func NewID() string { return rand.Text() }

// Now returns the time to store, at the microsecond precision both
// databases keep.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Limit returns the page size to use for a requested one.
func Limit(n int) int {
	if n <= 0 {
		return robby.DefaultListLimit
	}
	return n
}

// CheckMessages reports a message that is neither a JSON object nor an
// error record, or whose usage is negative.
func CheckMessages(msgs []robby.Message) error {
	for i, m := range msgs {
		if err := checkUsage(m.Usage); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		switch {
		case m.Chat == nil && m.Error == "":
			return fmt.Errorf("message %d: neither a chat message nor an error", i)
		case m.Chat != nil && m.Error != "":
			return fmt.Errorf("message %d: both a chat message and an error", i)
		case m.Chat != nil && (!json.Valid(m.Chat) || !strings.HasPrefix(strings.TrimSpace(string(m.Chat)), "{")):
			return fmt.Errorf("message %d: the chat message is not a JSON object", i)
		}
	}
	return nil
}

// A Cursor is where a page of a list ends: conversations come newest
// first by (Updated, ID).
type Cursor struct {
	Updated time.Time
	ID      string
}

// Encode returns the cursor as the opaque string a caller passes back.
func (c Cursor) Encode() string {
	s := strconv.FormatInt(c.Updated.UnixMicro(), 10) + "." + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// ErrCursor reports a cursor that no page returned.
var ErrCursor = errors.New("invalid list cursor")

// DecodeCursor reads a cursor; ok is false for the empty one of the first
// page.
func DecodeCursor(s string) (c Cursor, ok bool, err error) {
	if s == "" {
		return Cursor{}, false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, false, ErrCursor
	}
	micros, id, found := strings.Cut(string(b), ".")
	us, err := strconv.ParseInt(micros, 10, 64)
	if !found || err != nil {
		return Cursor{}, false, ErrCursor
	}
	return Cursor{Updated: time.UnixMicro(us).UTC(), ID: id}, true, nil
}

// Migrate brings a store's tables to the last of migrations; migrations[i] goes
// from version i to i+1. It runs inside the caller's transaction, which should
// keep other processes from migrating at the same time. exec runs a statement;
// queryInt runs a query returning one integer.
func Migrate(ctx context.Context, migrations []string,
	exec func(ctx context.Context, sql string) error,
	queryInt func(ctx context.Context, sql string) (int, error)) error {
	if err := exec(ctx, `CREATE TABLE IF NOT EXISTS robby_store_schema (version integer NOT NULL)`); err != nil {
		return err
	}
	v, err := queryInt(ctx, `SELECT coalesce(max(version), -1) FROM robby_store_schema`)
	if err != nil {
		return err
	}
	if v < 0 {
		if err := exec(ctx, `INSERT INTO robby_store_schema (version) VALUES (0)`); err != nil {
			return err
		}
		v = 0
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this program's (%d)", v, len(migrations))
	}
	for ; v < len(migrations); v++ {
		if err := exec(ctx, migrations[v]); err != nil {
			return fmt.Errorf("migrating to version %d: %w", v+1, err)
		}
	}
	return exec(ctx, fmt.Sprintf(`UPDATE robby_store_schema SET version = %d`, v))
}

// Page cuts a page of limit conversations from the limit+1 read. It returns the
// cursor of the next page, if there is one.
func Page(read []robby.Conversation, limit int) ([]robby.Conversation, string) {
	if len(read) <= limit {
		return read, ""
	}
	last := read[limit-1]
	return read[:limit], Cursor{Updated: last.Updated, ID: last.ID}.Encode()
}

// Fork returns the conversation to store as a fork of src at message n. It has
// src's usage when it holds all of src's messages. Otherwise the store sums the
// first n messages' usage.
func Fork(src robby.Conversation, n int64) (robby.Conversation, error) {
	if n < 0 || n > src.Messages {
		return robby.Conversation{}, fmt.Errorf("fork of %q at message %d: it holds %d", src.ID, n, src.Messages)
	}
	now := Now()
	fork := robby.Conversation{ID: NewID(), User: src.User, Title: src.Title, Metadata: maps.Clone(src.Metadata),
		Messages: n, Created: now, Updated: now}
	if n == src.Messages {
		fork.Usage = src.Usage
	}
	return fork, nil
}

// EncodeMetadata returns a conversation's metadata as the JSON object a
// store keeps: "{}" for none.
func EncodeMetadata(md map[string]string) string {
	if len(md) == 0 {
		return "{}"
	}
	b, err := json.Marshal(md)
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	return string(b)
}

// DecodeMetadata reads metadata that EncodeMetadata wrote: nil for none.
func DecodeMetadata(s string) (map[string]string, error) {
	var md map[string]string
	if err := json.Unmarshal([]byte(s), &md); err != nil {
		return nil, fmt.Errorf("conversation metadata: %w", err)
	}
	if len(md) == 0 {
		return nil, nil
	}
	return md, nil
}
