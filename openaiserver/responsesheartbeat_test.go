package openaiserver_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/openaiserver"
	"github.com/robby-go/robby/robbytest"
)

// lostStore is a store that a server can lose: while lost, its writes
// fail, as those of a crashed server never come.
type lostStore struct {
	robby.Store
	lost atomic.Bool
}

var errLost = errors.New("the store is out of reach")

func (s *lostStore) Append(ctx context.Context, user, id string, after int64, msgs ...robby.Message) error {
	if s.lost.Load() {
		return errLost
	}
	return s.Store.Append(ctx, user, id, after, msgs...)
}

func (s *lostStore) SetMetadata(ctx context.Context, user, id string, md map[string]string) error {
	if s.lost.Load() {
		return errLost
	}
	return s.Store.SetMetadata(ctx, user, id, md)
}

// TestResponsesStaleRunFails: a response whose server stops writing
// (crashed, or cut from the store) during its run reads "failed" on
// another replica once three heartbeats passed without a write; while its
// server's heartbeats come, it reads "in_progress" however long the run.
func TestResponsesStaleRunFails(t *testing.T) {
	const beat = 200 * time.Millisecond
	shared := newStore(t)
	lost := &lostStore{Store: shared}
	upstream := newServer(t)
	release := make(chan struct{})
	var released atomic.Bool
	t.Cleanup(func() {
		if !released.Load() {
			close(release)
		}
	})
	wait := waitTool(release)
	upstream.Reply(robbytest.ToolCalls(robbytest.Call("wait", `{}`)), robbytest.Text("Waited."))
	running := clientFor(serveResponses(t, upstream, openaiserver.Options{Store: lost, Heartbeat: beat}, robby.WithTools(wait)), "k")
	other := clientFor(serveResponses(t, upstream, openaiserver.Options{Store: shared, Heartbeat: beat}), "k")

	s := running.Responses.NewStreaming(t.Context(), ask("Wait", ""))
	defer s.Close()
	require.True(t, s.Next(), s.Err())
	id := s.Current().Response.ID
	status := func(c *responses.ResponseService) responses.Response {
		t.Helper()
		got, err := c.Get(t.Context(), id, responses.ResponseGetParams{})
		require.NoError(t, err)
		return *got
	}
	conv := func() robby.Conversation {
		t.Helper()
		page, _, err := shared.List(t.Context(), "", robby.ListOptions{Limit: 1})
		require.NoError(t, err)
		require.Len(t, page, 1)
		return page[0]
	}

	// Alive: heartbeats keep the response in progress past three of them.
	first := conv().Updated
	for beats := 0; beats < 4; {
		time.Sleep(beat / 4)
		if u := conv().Updated; u.After(first) {
			first, beats = u, beats+1
		}
	}
	assert.Equal(t, "in_progress", string(status(&other.Responses).Status), "a run whose heartbeats come")

	// Its server loses the store: another replica reads it failed once
	// three heartbeats passed.
	lost.lost.Store(true)
	cut := time.Now()
	var got responses.Response
	for got = status(&other.Responses); got.Status == "in_progress"; got = status(&other.Responses) {
		time.Sleep(beat / 4)
	}
	assert.GreaterOrEqual(t, time.Since(cut), 2*beat, "not stale before its heartbeats stop")
	assert.Equal(t, "failed", string(got.Status))
	assert.Contains(t, got.Error.Message, "stopped before it ended")
	assert.Equal(t, "in_progress", string(status(&running.Responses).Status), "its own server knows it runs")

	// The store comes back before the run ends: the end is recorded.
	lost.lost.Store(false)
	released.Store(true)
	close(release)
	for s.Next() {
	}
	require.NoError(t, s.Err())
	assert.Equal(t, "completed", string(status(&other.Responses).Status))
}
