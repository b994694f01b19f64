package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/convstore"
)

var _ robby.TaskStore = (*Store)(nil)

const taskColumns = convstore.TaskColumns

// CreateTask implements [robby.TaskStore].
func (s *Store) CreateTask(ctx context.Context, t robby.Task) error {
	now := convstore.Now().UnixMicro()
	return s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		r, err := tx.ExecContext(ctx, `INSERT INTO robby_store_tasks (`+taskColumns+`)
			VALUES (?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (user_id, id) DO NOTHING`,
			t.ID, t.User, t.ContextID, t.State, []byte(t.Data), now, now)
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, fmt.Errorf("task %q: %w", t.ID, robby.ErrTaskExists))
		}
		return nil
	})
}

// UpdateTask implements [robby.TaskStore].
func (s *Store) UpdateTask(ctx context.Context, t robby.Task, version int64) (int64, error) {
	now := convstore.Now().UnixMicro()
	err := s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		r, err := tx.ExecContext(ctx, `UPDATE robby_store_tasks
			SET context_id = ?, state = ?, data = ?, version = version + 1, updated = ?
			WHERE user_id = ? AND id = ? AND version = ?`,
			t.ContextID, t.State, []byte(t.Data), now, t.User, t.ID, version)
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil || n == 1 {
			return err
		}
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM robby_store_tasks WHERE user_id = ? AND id = ?`,
			t.User, t.ID).Scan(new(int))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("task %q: %w", t.ID, robby.ErrNoTask)
		}
		return errors.Join(err, fmt.Errorf("task %q is not at version %d: %w", t.ID, version, robby.ErrConflict))
	})
	return version + 1, err
}

// TouchTask implements [robby.TaskStore].
func (s *Store) TouchTask(ctx context.Context, user, id string) error {
	now := convstore.Now().UnixMicro()
	return s.inTx(ctx, func(ctx context.Context, tx stmtTx) error {
		r, err := tx.ExecContext(ctx, `UPDATE robby_store_tasks SET updated = ? WHERE user_id = ? AND id = ?`, now, user, id)
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, fmt.Errorf("task %q: %w", id, robby.ErrNoTask))
		}
		return nil
	})
}

// GetTask implements [robby.TaskStore].
func (s *Store) GetTask(ctx context.Context, user, id string) (robby.Task, error) {
	defer s.readStmts.prepare(ctx)
	t, err := scanTask(s.readStmts.queryRow(ctx, `SELECT `+taskColumns+` FROM robby_store_tasks
		WHERE user_id = ? AND id = ?`, user, id))
	if errors.Is(err, sql.ErrNoRows) {
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
	after := opts.UpdatedAfter.UnixMicro()
	if opts.UpdatedAfter.IsZero() {
		after = 0
	}
	defer s.readStmts.prepare(ctx) // after rows.Close
	const filter = ` WHERE user_id = ? AND (? = '' OR context_id = ?) AND (? = '' OR state = ?) AND updated >= ?`
	args := []any{user, opts.ContextID, opts.ContextID, opts.State, opts.State, after}
	if err := s.readStmts.queryRow(ctx, `SELECT count(*) FROM robby_store_tasks`+filter, args...).Scan(&page.Total); err != nil {
		return page, err
	}
	rows, err := s.readStmts.query(ctx, `SELECT `+taskColumns+` FROM robby_store_tasks`+filter+`
		AND (NOT ? OR (updated, id) < (?, ?)) ORDER BY updated DESC, id DESC LIMIT ?`,
		append(args, ok, cur.Updated.UnixMicro(), cur.ID, limit+1)...)
	if err != nil {
		return page, err
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return page, err
		}
		page.Tasks = append(page.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return page, err
	}
	page.Tasks, page.Next = convstore.Page(page.Tasks, limit, func(t robby.Task) convstore.Cursor {
		return convstore.Cursor{Updated: t.Updated, ID: t.ID}
	})
	return page, nil
}

// scanTask reads a row of taskColumns.
func scanTask(row interface{ Scan(...any) error }) (robby.Task, error) {
	var t robby.Task
	var data []byte
	var created, updated int64
	err := row.Scan(&t.ID, &t.User, &t.ContextID, &t.State, &data, &t.Version, &created, &updated)
	t.Data, t.Created, t.Updated = data, time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return t, err
}
