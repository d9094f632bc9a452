//go:build linux

package tasks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
)

func TestCommandTimeoutSaysTimedOut(t *testing.T) {
	t.Parallel()
	pidPath, pids := pidFIFO(t)
	c := newTestCommand(t, CommandConfig{Argv: sh(`echo $$ > "$1"; exec sleep 1000`, pidPath)})
	// The cause the pool gives a context that reached the type's timeout,
	// without waiting for a real deadline.
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	done := startRun(ctx, c, testJob(`{}`))
	pid := waitFor(t, pids)
	killOnFailure(t, pid)
	cancel(&queue.TimeoutError{Timeout: 3 * time.Second})
	r := waitFor(t, done)
	if got := fateOf(r.err); got != fateRetry || !errors.Is(r.err, context.DeadlineExceeded) {
		t.Errorf("run = %v (%s), want a retryable context.DeadlineExceeded", r.err, got)
	}
	if want := "command /bin/sh: timed out after 3s (killed by signal SIGTERM)"; r.err.Error() != want {
		t.Errorf("run = %q, want %q", r.err, want)
	}
	waitGone(t, pid)
}
