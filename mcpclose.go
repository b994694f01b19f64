package robby

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Closing a connection: once [Agent.Close] begins, no call starts and no
// server is started again. The calls and restarts under way get the
// server's grace period to end, then are cancelled with [ErrClosed]. Then
// the session ends. A command's process has the rest of the same grace
// period to exit before it is terminated.

// shutdown is what a connection needs to be closed in its grace period.
type shutdown struct {
	closed bool           // Close began; guarded by the connection's mu
	busy   sync.WaitGroup // calls and restarts under way

	// starting ends when Close begins: a restart under way stops.
	starting  context.Context
	endStarts context.CancelFunc
	// calls ends with ErrClosed once the grace period has passed.
	calls    context.Context
	endCalls context.CancelCauseFunc
}

func (sd *shutdown) init() {
	sd.starting, sd.endStarts = context.WithCancel(context.Background())
	sd.calls, sd.endCalls = context.WithCancelCause(context.Background())
}

// terminateWait is how long a command's process has to exit after SIGTERM
// before it is killed.
const terminateWait = 250 * time.Millisecond

// errClosed is the error of work refused or cancelled by Close.
func (c *mcpConn) errClosed() error {
	return fmt.Errorf("MCP server %q: %w", c.spec.name, ErrClosed)
}

// enter registers work on the session, for Close to wait for. It fails
// once Close began. The returned context ends with ErrClosed when Close
// stops waiting.
func (c *mcpConn) enter(ctx context.Context) (context.Context, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sd.closed {
		return nil, nil, c.errClosed()
	}
	c.sd.busy.Add(1)
	ctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(c.sd.calls, func() { cancel(ErrClosed) })
	return ctx, func() {
		stop()
		cancel(nil)
		c.sd.busy.Done()
	}, nil
}

// closedBy reports whether ctx, from enter, ended because of Close.
func closedBy(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrClosed) }

// close ends the connection within the server's grace period.
func (c *mcpConn) close() error {
	deadline := time.Now().Add(c.spec.grace)
	c.mu.Lock()
	c.sd.closed = true
	c.mu.Unlock()
	c.sd.endStarts()
	idle := make(chan struct{})
	go func() {
		c.sd.busy.Wait()
		close(idle)
	}()
	select {
	case <-idle:
	case <-time.After(c.spec.grace):
	}
	c.sd.endCalls(ErrClosed)
	<-idle
	c.mu.Lock()
	s, cancel, cmd := c.session, c.cancel, c.cmd
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	err := endProcess(cmd, deadline, done)
	if err != nil && !isExitError(err) {
		return c.hub.secrets.wrap(fmt.Errorf("MCP server %q: %w", c.spec.name, err))
	}
	return nil
}

// endProcess waits for a session's close to report on done. A command's
// process still running at deadline is terminated, then killed. A remote
// session's close (an HTTP DELETE the server may hold) is left to end on
// its own, bounded by the go-sdk.
func endProcess(cmd *exec.Cmd, deadline time.Time, done <-chan error) error {
	if cmd == nil || cmd.Process == nil {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Until(deadline) + terminateWait):
			return nil
		}
	}
	for _, sig := range []os.Signal{syscall.SIGTERM, os.Kill} {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Until(deadline)):
		}
		if cmd.Process.Signal(sig) != nil && sig != os.Kill {
			cmd.Process.Kill() // no SIGTERM on Windows
		}
		deadline = time.Now().Add(terminateWait)
	}
	return <-done
}

// isExitError reports the errors a session's close returns for a process
// that was terminated or had already died. The process is gone, as Close
// wants.
func isExitError(err error) bool {
	if errors.Is(err, os.ErrProcessDone) { // the go-sdk signalled a process that had just exited
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "signal: terminated") || strings.Contains(msg, "signal: killed") ||
		strings.Contains(msg, "exit status") || strings.Contains(msg, "broken pipe") || strings.Contains(msg, "file already closed")
}
