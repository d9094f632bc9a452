package queue

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestPoolTimeoutCauseNamesTheTimeout(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{})
	causes := make(chan error, 1)
	p.Register("slow", HandlerFunc(func(ctx context.Context, j *Job) error {
		<-ctx.Done() // the per-type deadline
		causes <- context.Cause(ctx)
		return context.Cause(ctx)
	}), TypeConfig{Timeout: 20 * time.Millisecond})
	runPool(t, p)
	mustEnqueue(t, q, NewJob{Type: "slow", Key: "k", MaxAttempts: 1})
	cause := waitFor(t, causes)
	te, ok := errors.AsType[*TimeoutError](cause)
	if !ok || te.Timeout != 20*time.Millisecond || !errors.Is(cause, context.DeadlineExceeded) {
		t.Fatalf("context.Cause = %#v, want a *TimeoutError of 20ms that is a context.DeadlineExceeded", cause)
	}
	eventually(t, "timed-out job dead", func() bool { return mustJob(t, q, "k").State == StateDead })
	if j := mustJob(t, q, "k"); j.LastError != "timed out after 20ms" {
		t.Errorf("last error %q, want %q", j.LastError, "timed out after 20ms")
	}
}
