package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/convstore"
)

var _ robby.TaskStore = (*Store)(nil)

const taskColumns = convstore.TaskColumns

// CreateTask implements [robby.TaskStore].
func (s *Store) CreateTask(ctx context.Context, t robby.Task) error {
	now := convstore.Now()
	tag, err := s.pool.Exec(ctx, `INSERT INTO robby_store_tasks (`+taskColumns+`)
		VALUES ($1, $2, $3, $4, $5, 1, $6, $6) ON CONFLICT (user_id, id) DO NOTHING`,
		t.ID, t.User, t.ContextID, t.State, string(t.Data), now)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("task %q: %w", t.ID, robby.ErrTaskExists)
	}
	return err
}

// UpdateTask implements [robby.TaskStore]. The update and the check of why
// it changed nothing are one statement.
func (s *Store) UpdateTask(ctx context.Context, t robby.Task, version int64) (int64, error) {
	var updated, found bool
	err := s.pool.QueryRow(ctx, `WITH up AS (
			UPDATE robby_store_tasks SET context_id = $3, state = $4, data = $5, version = version + 1, updated = $6
			WHERE user_id = $1 AND id = $2 AND version = $7 RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM up), EXISTS (SELECT 1 FROM robby_store_tasks WHERE user_id = $1 AND id = $2)`,
		t.User, t.ID, t.ContextID, t.State, string(t.Data), convstore.Now(), version).Scan(&updated, &found)
	switch {
	case err != nil:
		return 0, err
	case updated:
		return version + 1, nil
	case !found:
		return 0, fmt.Errorf("task %q: %w", t.ID, robby.ErrNoTask)
	}
	return 0, fmt.Errorf("task %q is not at version %d: %w", t.ID, version, robby.ErrConflict)
}

// TouchTask implements [robby.TaskStore].
func (s *Store) TouchTask(ctx context.Context, user, id string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE robby_store_tasks SET updated = $3 WHERE user_id = $1 AND id = $2`,
		user, id, convstore.Now())
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("task %q: %w", id, robby.ErrNoTask)
	}
	return err
}

// GetTask implements [robby.TaskStore].
func (s *Store) GetTask(ctx context.Context, user, id string) (robby.Task, error) {
	t, err := scanTask(s.pool.QueryRow(ctx, `SELECT `+taskColumns+` FROM robby_store_tasks
		WHERE user_id = $1 AND id = $2`, user, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return t, fmt.Errorf("task %q: %w", id, robby.ErrNoTask)
	}
	return t, err
}

// ListTasks implements [robby.TaskStore].
func (s *Store) ListTasks(ctx context.Context, user string, opts robby.TaskListOptions) (robby.TaskPage, error) {
	var page robby.TaskPage
	cur, ok, err := convstore.DecodeCursor(opts.Cursor)
	if err != nil {
		return page, err
	}
	limit := convstore.Limit(opts.Limit, robby.DefaultListLimit)
	const filter = ` WHERE user_id = $1 AND ($2 = '' OR context_id = $2) AND ($3 = '' OR state = $3) AND updated >= $4`
	args := []any{user, opts.ContextID, opts.State, opts.UpdatedAfter}
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM robby_store_tasks`+filter, args...).Scan(&page.Total); err != nil {
		return page, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+taskColumns+` FROM robby_store_tasks`+filter+`
		AND (NOT $5 OR (updated, id) < ($6, $7)) ORDER BY updated DESC, id DESC LIMIT $8`,
		append(args, ok, cur.Updated, cur.ID, limit+1)...)
	if err != nil {
		return page, err
	}
	page.Tasks, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (robby.Task, error) { return scanTask(r) })
	if err != nil {
		return page, err
	}
	page.Tasks, page.Next = convstore.Page(page.Tasks, limit, func(t robby.Task) convstore.Cursor {
		return convstore.Cursor{Updated: t.Updated, ID: t.ID}
	})
	return page, nil
}

// scanTask reads a row of taskColumns.
func scanTask(row pgx.Row) (robby.Task, error) {
	var t robby.Task
	var data string
	var created, updated time.Time
	err := row.Scan(&t.ID, &t.User, &t.ContextID, &t.State, &data, &t.Version, &created, &updated)
	t.Data, t.Created, t.Updated = []byte(data), created.UTC(), updated.UTC()
	return t, err
}
