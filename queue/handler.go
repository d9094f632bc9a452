package queue

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Handler runs jobs of one type. Work's error decides the fate: nil is done;
// an error retries with the type's backoff until MaxAttempts; Permanent(err)
// is dead at once; RetryAfter(d, err) retries after d. ctx carries the type's
// timeout and ends at shutdown; Work must then return soon.
type Handler interface {
	Work(ctx context.Context, job *Job) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, job *Job) error

// Work calls f(ctx, job).
func (f HandlerFunc) Work(ctx context.Context, job *Job) error { return f(ctx, job) }

// TypeConfig is one job type's policy. Zero values select the defaults.
type TypeConfig struct {
	Timeout     time.Duration // Deadline of one attempt's ctx. Default: none.
	Concurrency int           // Jobs of this type run at once by one Pool. Default: no limit beyond Workers.
	Backoff     time.Duration // Delay before the first retry, doubling after. Default: 1s.
	MaxBackoff  time.Duration // Cap on the retry delay. Default: 1h.
	// LogOutput logs a successful attempt's output tail, as failures always
	// do. Default: false.
	LogOutput bool
	// GiveUpAfter is a job's total budget, from Job.ScheduledAt (else
	// Job.CreatedAt), or Job.RetriedAt when later. No attempt starts past
	// its end: the job is dead with a *GaveUpError instead. A running
	// attempt is not stopped. It is read at claim and at failure, so a
	// change applies to queued jobs; a Retry gives a whole new budget.
	// Default: none.
	GiveUpAfter time.Duration
	// RedactFunc masks secrets in an attempt's output and error text s
	// before they are stored, logged or alarmed; it must be safe for
	// concurrent use. Default: none.
	RedactFunc func(j *Job, s string) string
	// Accepts are the payload versions (Job.Version) the pool runs; others
	// stay pending, attempts unspent, for a pool that accepts them. Each is
	// at least 1. Default: [1].
	Accepts []int
	// Rate limits how often jobs of this type start, across all pools.
	// Default: none.
	Rate Rate
}

// Rate limits how often jobs of one type start. Held in the database, it
// binds every process and node. A held-back job stays pending, keeps its
// attempts and starts when its bucket allows; other types go past it. With
// Burst 1, starts are at least Per/Starts apart; a Burst of b lets b start at
// once after a quiet spell, so a window Per long may hold Starts+b−1.
// RetryAfter(d, err) from a rate-limited type (an HTTP 429 or 503 with
// Retry-After) pauses the limit of its type, or key, for d. Rate-limited jobs
// are never prefetched, so a start counts when it happens. See
// store.RateLimit.
type Rate struct {
	Starts int           // jobs that may start per Per; 0: no limit
	Per    time.Duration // the window of Starts
	Burst  int           // starts allowed at once after a quiet spell; 0 means 1
	// Key, when set, limits per key read from the payload (a customer, an
	// account); it must be quick and safe for concurrent use. A claim scans
	// the first store.RateWindow ready jobs for keys that allow a start,
	// calling Key once per job, in its transaction. A Key that panics makes
	// its job dead unrun, the panic logged. Nil: one limit.
	Key func(payload json.RawMessage) string
}

// limit is r as the store applies it, Every rounded up so the limit is never
// exceeded. Its Key is the pool's to set.
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

// RateNextStart returns when rate r of jobType next allows a start of a job
// with payload (not after now: at once) and its bucket's key. A Key that
// panics is an error.
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
