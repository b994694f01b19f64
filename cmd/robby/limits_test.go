package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi"
	"github.com/robby-go/robby/internal/pgtest"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/sqlitestore"
)

// A fakeClock is a limiter's clock that a test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// post sends a run's request to h as user's token, and returns the answer.
func post(h http.Handler, path, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "application/json")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// limitError reads a 429's body, and checks its shape: OpenAI's error,
// with code rate_limit_exceeded.
func limitError(t *testing.T, w *httptest.ResponseRecorder) httpapi.ErrorBody {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	var body struct{ Error httpapi.ErrorBody }
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	require.NotNil(t, body.Error.Code)
	assert.Equal(t, "rate_limit_exceeded", *body.Error.Code)
	return body.Error
}

// TestLimiterRequestsPerMinute: each user's minute is counted apart; past
// the limit, every route that starts a run is refused with Retry-After up
// to the minute's end, and the next minute admits again. Requests that
// start no run, or carry no valid token, pass untouched.
func TestLimiterRequestsPerMinute(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 28, 9, 30, 15, 0, time.UTC)}
	l := &limiter{limits: limitFlags{rpm: 2}, counts: &memCounts{}, now: clock.now,
		guard: httpapi.NewGuard(map[string]string{"a-tok": "ann", "b-tok": "bob"}, nil), log: slog.New(slog.DiscardHandler)}
	var passed []string
	h := l.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := "-" // no run counted
		if run, ok := r.Context().Value(runUsageKey{}).(*runUsage); ok {
			user = run.user
		}
		passed = append(passed, r.URL.Path+" "+user)
	}))
	assert.Equal(t, http.StatusOK, post(h, "/v1/chat/completions", "a-tok").Code)
	assert.Equal(t, http.StatusOK, post(h, "/v1/responses", "a-tok").Code)
	for _, path := range []string{"/v1/chat/completions", "/v1/responses", "/api/chat", "/ag-ui"} {
		w := post(h, path, "a-tok")
		e := limitError(t, w)
		assert.Equal(t, "45", w.Header().Get("Retry-After"), path)
		assert.Equal(t, "requests", e.Type)
		assert.Equal(t, "You reached this server's limit of 2 requests a minute (-limit-rpm). Try again in 45 seconds.", e.Message)
	}
	assert.Equal(t, http.StatusOK, post(h, "/ag-ui", "b-tok").Code, "another user's minute")
	assert.Equal(t, http.StatusOK, post(h, "/v1/responses/resp_1/cancel", "a-tok").Code, "no run started")
	assert.Equal(t, http.StatusOK, post(h, "/api/chat", "wrong").Code, "the route answers 401")
	clock.add(45 * time.Second)
	assert.Equal(t, http.StatusOK, post(h, "/api/chat", "a-tok").Code, "a new minute")
	assert.Equal(t, []string{"/v1/chat/completions ann", "/v1/responses ann", "/ag-ui bob",
		"/v1/responses/resp_1/cancel -", "/api/chat -", "/api/chat ann"}, passed)
}

// TestLimiterTokensAndCostPerDay: the model calls of a user's run count
// their tokens and cost in the user's day, once when its request ends, and
// a call after that (a background response's) on its own. The run goes on
// past the limit; the user's next run is refused until midnight UTC, and
// the next day admits again.
func TestLimiterTokensAndCostPerDay(t *testing.T) {
	for _, tc := range []struct {
		name, kind, message string
		limits              limitFlags
	}{
		{"tokens", "tokens", "You reached this server's limit of 100 tokens a day (-limit-tokens-day). Try again in 3 hours.", limitFlags{tokensDay: 100}},
		{"cost", "cost", "You reached this server's limit of 0.01 spent a day (-limit-cost-day). Try again in 3 hours.", limitFlags{costDay: 0.01}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC)}
			counts := &memCounts{}
			l := &limiter{limits: tc.limits, counts: counts, guard: httpapi.NewGuard(nil, nil), now: clock.now, log: slog.New(slog.DiscardHandler)}
			call := func(ctx context.Context, tokens int64, cost float64) {
				res, err := l.middleware(ctx, &robby.ModelRequest{}, func(context.Context, *robby.ModelRequest) (*robby.ModelResponse, error) {
					return &robby.ModelResponse{Usage: robby.Usage{TotalTokens: tokens, Cost: cost}}, nil
				})
				require.NoError(t, err)
				assert.Equal(t, tokens, res.Usage.TotalTokens)
			}
			day := func() int64 {
				name := map[string]string{"tokens": countTokens, "cost": countCost}[tc.name]
				n, _ := counts.AddCount(t.Context(), "", name, dayOf(clock.now()), 0)
				return n
			}
			var runCtx context.Context
			h := l.handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				runCtx = r.Context()
				for range 2 { // 60 tokens, 0.006 spent
					call(r.Context(), 30, 0.003)
				}
				assert.Zero(t, day(), "counted when the request ends")
			}))
			call(t.Context(), 1000, 1) // a call of no user's run counts for no one
			assert.Equal(t, http.StatusOK, post(h, "/v1/responses", "").Code)
			assert.Positive(t, day())
			call(runCtx, 60, 0.006) // the background response goes on
			w := post(h, "/v1/chat/completions", "")
			e := limitError(t, w)
			assert.Equal(t, tc.kind, e.Type)
			assert.Equal(t, tc.message, e.Message)
			assert.Equal(t, strconv.Itoa(3*3600), w.Header().Get("Retry-After"))
			clock.add(3 * time.Hour)
			assert.Equal(t, http.StatusOK, post(h, "/v1/chat/completions", "").Code, "a new day")
		})
	}
}

func TestLimitFlagsCheck(t *testing.T) {
	assert.NoError(t, (&limitFlags{}).check(false))
	assert.ErrorContains(t, (&limitFlags{rpm: -1}).check(false), "-limit-rpm is -1")
	assert.ErrorContains(t, (&limitFlags{tokensDay: -5}).check(false), "-limit-tokens-day is -5")
	assert.ErrorContains(t, (&limitFlags{costDay: 1}).check(false), "-limit-cost-day needs the models' prices")
	assert.NoError(t, (&limitFlags{costDay: 1}).check(true))
}

// waitForFreshMinute returns once the current minute has room for a test
// that counts requests in it.
func waitForFreshMinute() {
	if s := time.Now().Second(); s >= 45 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
}

// TestServeLimitsRequestsPerMinute: robby serve -limit-rpm, without a
// store, refuses a user's run past the limit on the endpoint, the UI
// stream and AG-UI alike, with 429, Retry-After and a plain message,
// while another user goes on.
func TestServeLimitsRequestsPerMinute(t *testing.T) {
	srv := upstream(t, robbytest.Text("one"), robbytest.Text("two"))
	waitForFreshMinute()
	base, _ := serveInProcess(t, "-base-url", srv.URL, "-model", "agent", "-token", "ann:a-tok", "-token", "bob:b-tok", "-limit-rpm", "1")
	root := strings.TrimSuffix(base, "/v1")
	send := func(path, token, body string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodPost, root+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	const chat = `{"model":"agent","messages":[{"role":"user","content":"hi"}]}`
	res, body := send("/v1/chat/completions", "a-tok", chat)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	for path, body := range map[string]string{
		"/v1/chat/completions": chat,
		"/v1/responses":        `{"model":"agent","input":"hi"}`,
		"/api/chat":            `{"id":"c1","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`,
		"/ag-ui":               `{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":"hi"}]}`,
	} {
		res, got := send(path, "a-tok", body)
		assert.Equal(t, http.StatusTooManyRequests, res.StatusCode, path)
		secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
		require.NoError(t, err, path)
		assert.True(t, secs >= 1 && secs <= 60, "%s: Retry-After %d", path, secs)
		assert.Contains(t, got, `"code":"rate_limit_exceeded"`, path)
		assert.Contains(t, got, "limit of 1 request a minute (-limit-rpm)", path)
	}
	res, body = send("/v1/chat/completions", "b-tok", chat)
	assert.Equal(t, http.StatusOK, res.StatusCode, body)
	assert.Len(t, srv.Requests(), 2, "no refused run reached the model")
}

// TestServeLimitsAcrossProcesses: two robby serve processes on one SQLite
// store count a user's minute together: the second refuses once the first
// used it up.
func TestServeLimitsAcrossProcesses(t *testing.T) {
	srv := upstream(t, robbytest.Text("one"), robbytest.Text("two"))
	store := filepath.Join(t.TempDir(), "robby.db")
	args := []string{"-base-url", srv.URL, "-model", "agent", "-token", "ann:a-tok", "-store", store, "-limit-rpm", "2"}
	waitForFreshMinute()
	_, first, _ := serveProcess(t, args...)
	_, second, _ := serveProcess(t, args...)
	assert.Equal(t, "one", streamFrom(t, first, "a-tok", "hi"))
	assert.Equal(t, "two", streamFrom(t, first, "a-tok", "hi"))
	refusedBy(t, second, "a-tok")
}

// refusedBy checks that the server at base refuses a user's chat
// completion for the minute's limit.
func refusedBy(t *testing.T, base, token string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/chat/completions",
		strings.NewReader(`{"model":"agent","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode, "%s", b)
	assert.NotEmpty(t, res.Header.Get("Retry-After"))
	assert.Contains(t, string(b), "-limit-rpm")
}

// BenchmarkLimiter is what the limits add to a run: its admission (the
// day's tokens read, its minute counted), two model calls, and the run's
// tokens counted once at its end, in memory and in a SQLite store.
// Allocations are the figure to read here.
func BenchmarkLimiter(b *testing.B) {
	store, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "robby.db"))
	require.NoError(b, err)
	b.Cleanup(func() { store.Close() })
	for name, counts := range map[string]counter{"memory": &memCounts{}, "sqlite": store} {
		b.Run(name, func(b *testing.B) {
			l := &limiter{limits: limitFlags{rpm: 1 << 30, tokensDay: 1 << 40}, counts: counts, guard: httpapi.NewGuard(nil, nil), now: time.Now, log: slog.New(slog.DiscardHandler)}
			next := func(context.Context, *robby.ModelRequest) (*robby.ModelResponse, error) {
				return &robby.ModelResponse{Usage: robby.Usage{TotalTokens: 100}}, nil
			}
			b.ReportAllocs()
			for b.Loop() {
				if l.admit(b.Context(), "ann") != nil {
					b.Fatal("refused")
				}
				run := &runUsage{user: "ann"}
				ctx := context.WithValue(b.Context(), runUsageKey{}, run)
				for range 2 {
					if _, err := l.middleware(ctx, &robby.ModelRequest{}, next); err != nil {
						b.Fatal(err)
					}
				}
				tokens, micros := run.end()
				l.charge(b.Context(), "ann", tokens, micros)
			}
		})
	}
}

// TestServeLimitsAcrossReplicasOnPostgres: two robby serve processes on one
// PostgreSQL database (a real server, started by the test) count a user's
// minute together: the second refuses once the first used it up.
func TestServeLimitsAcrossReplicasOnPostgres(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	srv := upstream(t, robbytest.Text("one"), robbytest.Text("two"))
	args := []string{"-base-url", srv.URL, "-model", "agent", "-token", "ann:a-tok", "-token", "bob:b-tok", "-store", dsn, "-limit-rpm", "2"}
	waitForFreshMinute()
	_, first, _ := serveProcess(t, args...)
	_, second, _ := serveProcess(t, args...)
	assert.Equal(t, "one", streamFrom(t, first, "a-tok", "hi"))
	assert.Equal(t, "two", streamFrom(t, first, "a-tok", "hi"))
	refusedBy(t, second, "a-tok")
	refusedBy(t, first, "a-tok")
	srv.Reply(robbytest.Text("three"))
	assert.Equal(t, "three", streamFrom(t, second, "b-tok", "hi"), "another user's minute")
}
