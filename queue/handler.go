package queue

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
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
	// Accepts are the payload versions (Job.Version) of this type that the
	// pool runs: it claims no job of another version, which stays pending,
	// its attempts unspent, for a pool that accepts it (see
	// Handlers). Each is at least 1. Default: [1].
	Accepts []int
	// Rate limits how often jobs of this type start, across every pool on
	// the store. Default: none.
	Rate Rate
}

// Rate is a limit on how often jobs of one type start, held in the
// database, so that it holds across every process on a SQLite file and
// every node on PostgreSQL. A job it holds back stays pending, keeps its
// attempts, and starts as soon as its bucket allows; jobs of other types
// go past it. With Burst 1, starts are at least Per/Starts apart, so no
// window of length Per holds more than Starts of them; a Burst of b lets b
// start at once after a quiet spell, so a window may then hold up to
// Starts+b−1. A handler that returns RetryAfter(d, err) for a job of a
// rate-limited type (an HTTP task's 429 or 503 with Retry-After does)
// pauses the limit of its type, or its key, for d: no job it covers starts
// before then. Jobs of a rate-limited type are never claimed ahead of a
// free worker (see PoolConfig.Prefetch), so a job starts when its start is
// counted. See store.RateLimit for the algorithm.
type Rate struct {
	Starts int           // jobs that may start per Per; 0: no limit
	Per    time.Duration // the window of Starts
	Burst  int           // starts allowed at once after a quiet spell; 0 means 1
	// Key, when set, gives a limit per key, read from each job's payload
	// (a customer, an account) when it is claimed; it must be quick and
	// safe for concurrent use. Among ready jobs of the type, the claim
	// reads the first store.RateWindow in claim order to find those whose
	// key allows a start; the pool calls Key once per job, inside the
	// claim's write transaction the first time a claim reads the job, and
	// keeps its key for the claims after. A Key that panics fails its job:
	// the job is dead at once, without running, its error the panic with
	// its stack, which the pool also logs; the pool and the other jobs
	// carry on. Nil: one limit for the type.
	Key func(payload json.RawMessage) string
}

// limit is r as the store applies it: one start per Per/Starts, rounded up
// to the nanosecond so that the limit is never exceeded. Its Key is the
// pool's to set (see rateKeys).
func (r Rate) limit() store.RateLimit {
	every := r.Per / time.Duration(r.Starts)
	if every*time.Duration(r.Starts) < r.Per {
		every++
	}
	return store.RateLimit{Every: every, Burst: max(r.Burst, 1)}
}

func (r Rate) check() error {
	switch {
	case r.Starts < 0 || r.Burst < 0:
		return errors.New("negative rate")
	case r.Starts > 0 && r.Per <= 0:
		return errors.New("rate without a period")
	case r.Starts == 0 && (r.Burst != 0 || r.Key != nil):
		return errors.New("rate burst or key without a rate")
	}
	return nil
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

// RateNextStart returns when the rate limit r of jobType allows the next
// start of a job with payload, and the key of its bucket ("" when r has no
// Key). An instant not after now means at once. A Key that panics is an
// error.
func (q *Client) RateNextStart(ctx context.Context, jobType string, r Rate, payload json.RawMessage) (time.Time, string, error) {
	l := r.limit()
	var key string
	if r.Key != nil {
		var err error
		if key, err = r.key(payload); err != nil {
			return time.Time{}, "", err
		}
	}
	tat, err := q.RateTAT(ctx, jobType, key)
	if err != nil || tat.IsZero() {
		return time.Time{}, key, err
	}
	return l.NextStart(tat), key, nil
}
