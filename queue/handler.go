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
	// GiveUpAfter is the total budget of a job of this type, counted from
	// the instant it stands for (Job.ScheduledAt) or, for a job of no
	// instant, from its enqueue (Job.CreatedAt); or from the operator's
	// latest Retry of it (Job.RetriedAt) when that is later. No attempt
	// starts at or after the budget's end: a claimed job past it is dead
	// without running, and a failed attempt whose retry would come at or
	// after it makes the job dead instead; both with a *GaveUpError. An
	// attempt already running when the budget ends is not stopped (Timeout
	// bounds it). It is read when the job is claimed and when it fails, so
	// a changed value applies to the jobs already queued. A Retry gives the
	// job a whole budget from the retry, whether the old one had ended or
	// not, so that an operator can run by hand a job that gave up. Default:
	// none.
	GiveUpAfter time.Duration
	// RedactFunc masks the secrets in an attempt's output and in its error
	// text (s) before they are stored, logged or raised in an alarm, given
	// the job; it must be safe for concurrent use. Default: nil, nothing
	// masked.
	RedactFunc func(j *Job, s string) string
}

// giveUpAt is when the GiveUpAfter budget of j ends; zero when its type has
// none.
func (tc TypeConfig) giveUpAt(j *Job) time.Time {
	if tc.GiveUpAfter <= 0 {
		return time.Time{}
	}
	from := j.ScheduledAt
	if from.IsZero() {
		from = j.CreatedAt
	}
	if j.RetriedAt.After(from) {
		from = j.RetriedAt
	}
	return from.Add(tc.GiveUpAfter)
}
