package queue

import (
	"context"
	"time"
)

// Handler runs jobs of one type. Work's error decides the job's fate: nil is
// done; a plain error is retried with the type's backoff until MaxAttempts;
// Permanent(err) is dead at once; RetryAfter(d, err) retries no earlier than
// d from now. ctx carries the type's timeout and is cancelled on shutdown;
// Work must return soon after ctx is done.
type Handler interface {
	Work(ctx context.Context, job *Job) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, job *Job) error

// Work calls f(ctx, job).
func (f HandlerFunc) Work(ctx context.Context, job *Job) error { return f(ctx, job) }

// TypeConfig is the policy of one job type. Zero values select the defaults
// shown.
type TypeConfig struct {
	Timeout     time.Duration // Deadline of one attempt's ctx. Default: none.
	Concurrency int           // Jobs of this type run at once by one Pool. Default: no limit beyond Workers.
	Backoff     time.Duration // Delay before the first retry, doubling after. Default: 1s.
	MaxBackoff  time.Duration // Cap on the retry delay. Default: 1h.
	// LogOutput logs the tail of a successful attempt's output with its
	// "job done" line, as failed attempts always do. Default: false.
	LogOutput bool
}
