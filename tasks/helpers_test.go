package tasks

import (
	"errors"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
)

// failAfter is how long a test waits for an effect before it fails. It is a
// failure deadline, never a synchronisation point.
const failAfter = 3 * time.Minute

func waitFor[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failAfter):
		t.Fatal("timed out waiting")
	}
	var zero T
	return zero
}

// Fates of a job, as a handler's error decides them.
const (
	fateDone       = "done"
	fatePermanent  = "permanent"
	fateRetryAfter = "retry after"
	fateRetry      = "retry"
)

func fateOf(err error) string {
	var perm *queue.PermanentError
	var retry *queue.RetryError
	switch {
	case err == nil:
		return fateDone
	case errors.As(err, &perm):
		return fatePermanent
	case errors.As(err, &retry):
		return fateRetryAfter
	}
	return fateRetry
}
