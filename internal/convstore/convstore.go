// Package convstore holds what the SQL stores share: input checks, IDs,
// times and list cursors. It does not import the root. The stores hand it
// their values, converted ([Usage]) or field by field.
package convstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// NewID returns a random conversation ID: 26 characters, 128 bits.
func NewID() string { return rand.Text() }

// Now returns the time to store, at the microsecond precision both
// databases keep.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// Limit returns the page size to use for a requested one: def if none
// was.
func Limit(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// CheckMessages reports a message that is neither a JSON object nor an
// error record, or whose usage is negative. parts gives a message's
// chat, error and usage.
func CheckMessages[M any](msgs []M, parts func(M) (json.RawMessage, string, Usage)) error {
	for i, m := range msgs {
		if err := checkMessage(parts(m)); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
	return nil
}

// checkMessage checks one message's parts.
func checkMessage(chat json.RawMessage, errText string, u Usage) error {
	if err := u.check(); err != nil {
		return err
	}
	switch {
	case chat == nil && errText == "":
		return errors.New("neither a chat message nor an error")
	case chat != nil && errText != "":
		return errors.New("both a chat message and an error")
	case chat != nil && (!json.Valid(chat) || !strings.HasPrefix(strings.TrimSpace(string(chat)), "{")):
		return errors.New("the chat message is not a JSON object")
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

// Migrate brings a store's tables to the last of migrations. migrations[i]
// goes from version i to i+1. It runs in the caller's transaction, which
// should keep other processes from migrating at once. exec runs a
// statement. queryInt runs a query returning one integer.
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

// Page cuts a page of limit conversations from the limit+1 read. It
// returns the next page's cursor, if any. at gives a conversation's
// cursor.
func Page[C any](read []C, limit int, at func(C) Cursor) ([]C, string) {
	if len(read) <= limit {
		return read, ""
	}
	return read[:limit], at(read[limit-1]).Encode()
}

// CheckFork refuses a fork at message n of conversation id, which holds
// held messages, when n is out of range.
func CheckFork(id string, held, n int64) error {
	if n < 0 || n > held {
		return fmt.Errorf("fork of %q at message %d: it holds %d", id, n, held)
	}
	return nil
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

// TaskColumns are the columns of the stores' tasks table
// (robby_store_tasks), in the order their scans read them.
const TaskColumns = `id, user_id, context_id, state, data, version, created, updated`
