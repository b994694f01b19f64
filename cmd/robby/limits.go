package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/internal/httpapi"
)

// limitFlags are robby serve's limits per user. Each is 0 for no limit.
type limitFlags struct {
	rpm       int
	tokensDay int64
	costDay   float64
}

func (f *limitFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.rpm, "limit-rpm", 0, "requests a user may start in a minute (chat completions, responses, the chat page's and AG-UI's runs); past it, 429 with Retry-After; counted in the -store, which replicas share; 0 for no limit")
	fs.Int64Var(&f.tokensDay, "limit-tokens-day", 0, "tokens (prompt and completion) a user's runs may use in a day (UTC); once used, 429 until midnight UTC; a run started within it finishes (bound it with -budget-tokens); 0 for no limit")
	fs.Float64Var(&f.costDay, "limit-cost-day", 0, "the `amount` a user's runs may cost in a day (UTC), at the -prices given; once spent, 429 until midnight UTC; 0 for no limit")
}

// check reports a limit the flags cannot give, in their words.
func (f *limitFlags) check(prices bool) error {
	switch {
	case f.rpm < 0:
		return fmt.Errorf("-limit-rpm is %d: give a number of requests, or 0 for no limit", f.rpm)
	case f.tokensDay < 0:
		return fmt.Errorf("-limit-tokens-day is %d: give a number of tokens, or 0 for no limit", f.tokensDay)
	case f.costDay < 0 || math.IsNaN(f.costDay) || math.IsInf(f.costDay, 0):
		return fmt.Errorf("-limit-cost-day is %v: give an amount in the prices' currency, or 0 for no limit", f.costDay)
	case f.costDay > 0 && !prices:
		return errors.New("-limit-cost-day needs the models' prices: give -prices FILE")
	}
	return nil
}

// limiter checks the flags and returns the limiter of the server's tokens,
// or nil when no limit is set. It gives the agent its model middleware,
// which counts what a user's runs use.
func (f *limitFlags) limiter(agent *agentFlags, tokens serveTokens, log *slog.Logger) (*limiter, error) {
	if err := f.check(agent.budget.prices != ""); err != nil || *f == (limitFlags{}) {
		return nil, err
	}
	l := &limiter{limits: *f, guard: httpapi.NewGuard(tokens, nil), log: log, now: time.Now}
	agent.extra = append(agent.extra, robby.WithModelMiddleware(l.middleware))
	return l, nil
}

// wrap returns h behind the limits, counted in the store if it keeps
// counters, which replicas sharing it then share (robby's stores do). Else
// they are counted in memory. A nil limiter returns h.
func (l *limiter) wrap(h http.Handler, store robby.Store) http.Handler {
	if l == nil {
		return h
	}
	l.counts = &memCounts{}
	if c, ok := store.(counter); ok {
		l.counts = c
	}
	return l.handler(h)
}

// A counter keeps each user's counters, per window: robby's stores
// (sqlitestore, pgstore) across replicas, or memCounts in one process.
type counter interface {
	AddCount(ctx context.Context, user, name string, window time.Time, n int64) (int64, error)
}

// The counters' names. Cost is counted in millionths of the prices'
// currency, a whole number as the counters are.
const (
	countRequests = "requests"
	countTokens   = "tokens"
	countCost     = "cost_micros"
)

// A limiter holds each user to the limits. Its handler refuses the runs of
// a user past one; its model middleware counts what each model call used.
// It is safe for concurrent use.
type limiter struct {
	limits limitFlags
	counts counter
	guard  *httpapi.Guard // the server's tokens, to know the user before the route does
	log    *slog.Logger
	now    func() time.Time
}

// runRoutes are the routes that start a run, which the limits count.
var runRoutes = map[string]bool{
	"/v1/chat/completions": true, "/v1/responses": true, "/api/chat": true, "/ag-ui": true,
}

// handler refuses, with 429, a run that a user past a limit asks for. It
// lets every other request through, and those without a valid token, which
// next answers 401.
func (l *limiter) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !runRoutes[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		user, ok := l.guard.Authenticate(r.Header.Get("Authorization"))
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if over := l.admit(r.Context(), user); over != nil {
			over.write(w)
			return
		}
		run := &runUsage{user: user}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), runUsageKey{}, run)))
		if tokens, micros := run.end(); tokens > 0 || micros > 0 {
			l.charge(context.WithoutCancel(r.Context()), user, tokens, micros)
		}
	})
}

// A runUsage sums what the model calls of a user's run used while its
// request is served, to count it once at the end. A call after that (of a
// background response) is counted on its own.
type runUsage struct {
	user   string
	mu     sync.Mutex
	ended  bool
	tokens int64
	micros int64
}

// runUsageKey is the context key of the runUsage of a model call's run.
type runUsageKey struct{}

// add sums a call's usage, and reports false once the request ended.
func (u *runUsage) add(tokens, micros int64) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ended {
		return false
	}
	u.tokens += tokens
	u.micros += micros
	return true
}

// end returns the sums, and has the calls after it counted on their own.
func (u *runUsage) end() (tokens, micros int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ended = true
	return u.tokens, u.micros
}

// An overLimit is a limit a user reached, and when it lets them go on.
type overLimit struct {
	kind  string // "requests", "tokens" or "cost", as OpenAI types its 429s
	what  string // the limit in words, with its flag
	retry time.Duration
}

// write answers 429 in OpenAI's error shape, with Retry-After in seconds.
func (o *overLimit) write(w http.ResponseWriter) {
	secs := int64(math.Ceil(o.retry.Seconds()))
	w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	httpapi.WriteError(w, http.StatusTooManyRequests, o.kind, "rate_limit_exceeded", "",
		fmt.Sprintf("You reached this server's limit of %s. Try again in %s.", o.what, wait(o.retry)))
}

// wait says how long to wait, in whole seconds, minutes or hours.
func wait(d time.Duration) string {
	switch {
	case d <= time.Minute:
		return quantity(int64(math.Ceil(max(d.Seconds(), 1))), "second")
	case d <= time.Hour:
		return quantity(int64(math.Ceil(d.Minutes())), "minute")
	}
	return quantity(int64(math.Ceil(d.Hours())), "hour")
}

// quantity writes n units, such as "1 request" or "20 requests".
func quantity(n int64, unit string) string {
	return strconv.FormatInt(n, 10) + " " + plural(int(min(n, 2)), unit)
}

// admit counts a user's run and returns the limit it is past, if any. The
// day's limits are read first: a run they refuse is not counted in the
// minute. A counter that fails lets the run through, with a warning: the
// limits must not stop the service.
func (l *limiter) admit(ctx context.Context, user string) *overLimit {
	now := l.now().UTC()
	day := dayOf(now)
	untilMidnight := day.AddDate(0, 0, 1).Sub(now)
	if l.limits.tokensDay > 0 && l.count(ctx, user, countTokens, day, 0) >= l.limits.tokensDay {
		return &overLimit{"tokens", quantity(l.limits.tokensDay, "token") + " a day (-limit-tokens-day)", untilMidnight}
	}
	if l.limits.costDay > 0 && l.count(ctx, user, countCost, day, 0) >= micros(l.limits.costDay) {
		return &overLimit{"cost", strconv.FormatFloat(l.limits.costDay, 'f', -1, 64) + " spent a day (-limit-cost-day)", untilMidnight}
	}
	if l.limits.rpm > 0 {
		minute := now.Truncate(time.Minute)
		if l.count(ctx, user, countRequests, minute, 1) > int64(l.limits.rpm) {
			return &overLimit{"requests", quantity(int64(l.limits.rpm), "request") + " a minute (-limit-rpm)", minute.Add(time.Minute).Sub(now)}
		}
	}
	return nil
}

// count adds n to a user's counter and returns its total; 0 if the counter
// failed, which it logs.
func (l *limiter) count(ctx context.Context, user, name string, window time.Time, n int64) int64 {
	total, err := l.counts.AddCount(ctx, user, name, window, n)
	if err != nil {
		l.log.WarnContext(ctx, "robby: counting for the limits per user", slog.String("counter", name), slog.Any("error", err))
	}
	return total
}

// middleware counts the tokens and the cost of each model call of a user's
// run, in the day's counters: once for the whole run when its request ends,
// to write once. A run a limit admitted goes on past it: the limits refuse
// the user's next run.
func (l *limiter) middleware(ctx context.Context, req *robby.ModelRequest, next robby.ModelHandler) (*robby.ModelResponse, error) {
	res, err := next(ctx, req)
	run, ok := ctx.Value(runUsageKey{}).(*runUsage)
	if !ok || res == nil {
		return res, err
	}
	tokens, cost := res.Usage.TotalTokens, micros(res.Usage.Cost)
	if !run.add(tokens, cost) {
		l.charge(context.WithoutCancel(ctx), run.user, tokens, cost)
	}
	return res, err
}

// charge counts tokens and cost in a user's day, for the limits set. What
// was used counts, the run cancelled or not.
func (l *limiter) charge(ctx context.Context, user string, tokens, micros int64) {
	day := dayOf(l.now().UTC())
	if l.limits.tokensDay > 0 && tokens > 0 {
		l.count(ctx, user, countTokens, day, tokens)
	}
	if l.limits.costDay > 0 && micros > 0 {
		l.count(ctx, user, countCost, day, micros)
	}
}

// dayOf returns the start of t's day, in t's location.
func dayOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
}

// micros is an amount in millionths, rounded up.
func micros(amount float64) int64 { return int64(math.Ceil(amount * 1e6)) }

// memCounts are the counters of a server without a store, in its memory. Each
// counter keeps its last window only.
type memCounts struct {
	mu sync.Mutex
	m  map[memKey]memCount
}

type memKey struct{ user, name string }

type memCount struct {
	window time.Time
	value  int64
}

// AddCount adds n to the user's counter in window and returns its total.
func (c *memCounts) AddCount(_ context.Context, user, name string, window time.Time, n int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := memKey{user, name}
	e := c.m[k]
	if !e.window.Equal(window) {
		if n == 0 || window.Before(e.window) {
			return 0, nil
		}
		e = memCount{window: window}
	}
	e.value += n
	if c.m == nil {
		c.m = map[memKey]memCount{}
	}
	c.m[k] = e
	return e.value, nil
}
