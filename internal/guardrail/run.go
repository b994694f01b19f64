package guardrail

import (
	"context"
	"fmt"
	"time"
)

// Run calls f with a context that ends after timeout, and returns its
// value. If f errs, panics, or has not returned by the timeout (or the end
// of ctx), Run returns why instead, and a guard fails closed. An f that
// ignores its context is abandoned: its goroutine ends when it returns.
func Run[V any](ctx context.Context, timeout time.Duration, f func(context.Context) (V, error)) (v V, failed string) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("timed out after %v", timeout))
	defer cancel()
	type outcome struct {
		v      V
		failed string
	}
	done := make(chan outcome, 1) // never blocks an abandoned f
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- outcome{failed: fmt.Sprintf("panicked: %v", p)}
			}
		}()
		v, err := f(ctx)
		if err != nil {
			done <- outcome{failed: "failed: " + err.Error()}
			return
		}
		done <- outcome{v: v}
	}()
	select {
	case o := <-done:
		return o.v, o.failed
	case <-ctx.Done():
		return v, context.Cause(ctx).Error()
	}
}
