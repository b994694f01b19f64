package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/chattext"
	"github.com/robby-go/robby/pgstore"
	"github.com/robby-go/robby/sqlitestore"
)

// checkStore reads back what robby stored of the users' responses. Each
// response is a conversation of its own, a fork of the one before. So a user
// has one per turn, and the last holds the whole conversation: every prompt
// sent, once, in order, and every answer received. It returns the prompts
// stored in those last conversations.
func checkStore(ctx context.Context, path, prefix string, turns []turn, users, perUser int) (int, error) {
	var store interface {
		robby.Store
		Close() error
	}
	var err error
	if strings.HasPrefix(path, "postgres") {
		store, err = pgstore.Open(ctx, path)
	} else {
		store, err = sqlitestore.Open(ctx, path)
	}
	if err != nil {
		return 0, err
	}
	defer store.Close()
	byUser := make([][]turn, users)
	for _, t := range turns {
		byUser[t.user] = append(byUser[t.user], t)
	}
	stored := 0
	var errs []error
	for u, ts := range byUser {
		n, err := checkUser(ctx, store, userName(prefix, u), ts)
		stored += n
		if err != nil {
			errs = append(errs, fmt.Errorf("user %d: %w", u, err))
		}
	}
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Errorf("and %d more users", len(errs)-3))
	}
	return stored, errors.Join(errs...)
}

// checkUser checks one user's stored conversations against its turns.
func checkUser(ctx context.Context, store robby.Store, user string, turns []turn) (int, error) {
	var convs int
	for cursor := ""; ; {
		page, next, err := store.List(ctx, user, robby.ListOptions{Cursor: cursor})
		if err != nil {
			return 0, err
		}
		convs += len(page)
		if cursor = next; next == "" {
			break
		}
	}
	if convs != len(turns) {
		return 0, fmt.Errorf("%d conversations stored for %d responses", convs, len(turns))
	}
	last := turns[len(turns)-1].response
	id := strings.TrimPrefix(last, "resp_")
	if i := strings.LastIndexByte(id, '_'); i > 0 {
		id = id[:i]
	}
	_, msgs, err := store.Load(ctx, user, id)
	if err != nil {
		return 0, fmt.Errorf("the last response %s: %w", last, err)
	}
	var prompts, answers []string
	for _, m := range msgs {
		var cm chattext.Message
		if m.Chat == nil {
			return 0, fmt.Errorf("an error record in %s: %s", id, m.Error)
		}
		if err := json.Unmarshal(m.Chat, &cm); err != nil {
			return 0, err
		}
		switch text := cm.Text(); {
		case cm.Role == "user":
			prompts = append(prompts, text)
		case cm.Role == "assistant" && text != "":
			answers = append(answers, text)
		}
	}
	var sent, got []string
	for _, t := range turns {
		sent, got = append(sent, t.prompt), append(got, t.answer)
	}
	switch {
	case !slices.Equal(prompts, sent):
		return len(prompts), fmt.Errorf("prompts stored %q, sent %q", prompts, sent)
	case !slices.Equal(answers, got):
		return len(prompts), fmt.Errorf("answers stored %q, received %q", answers, got)
	}
	return len(prompts), nil
}
