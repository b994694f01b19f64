package uistream

import (
	"context"
	"sync"
)

// chatLocks lets one run at a time go on in each stored chat of a handler.
// A run its client stopped still saves what it did before it returns. The
// chat's next question waits for that: started before, it would read the
// chat without it, and its own saves would conflict.
type chatLocks struct {
	mu    sync.Mutex
	locks map[string]*chatLock
}

// A chatLock is one chat's turn: a run holds its token, the others wait.
type chatLock struct {
	token   chan struct{}
	waiting int // the runs holding or waiting for it
}

// lock waits for the chat's turn, or for ctx to end. unlock gives the turn
// to the next run.
func (l *chatLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*chatLock{}
	}
	c := l.locks[key]
	if c == nil {
		c = &chatLock{token: make(chan struct{}, 1)}
		l.locks[key] = c
	}
	c.waiting++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if c.waiting--; c.waiting == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
	select {
	case c.token <- struct{}{}:
		return func() { <-c.token; release() }, nil
	case <-ctx.Done():
		release()
		return nil, context.Cause(ctx)
	}
}
