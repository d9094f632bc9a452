package queue

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// AttemptConfig configures RunAttempt. Zero values select the defaults shown.
type AttemptConfig struct {
	Type  TypeConfig  // the policy of the job's type, as registered with a Pool
	Clock clock.Clock // Default: clock.Real{}.
	// Jitter returns a uniform duration in [0, n), the random part of a
	// retry's backoff. Default: random, as a Pool; queuetest fixes it.
	Jitter func(n time.Duration) time.Duration
}

// AttemptResult is how one attempt ended, as a Pool would record it.
type AttemptResult struct {
	Outcome  Outcome       // OutcomeDone, OutcomeRetry or OutcomeDead
	RetryAt  time.Time     // with OutcomeRetry, when the next attempt may start
	RetryIn  time.Duration // with OutcomeRetry, RetryAt − Finished
	Output   string        // the attempt's output, through the type's RedactFunc
	Err      error         // why it failed; nil when done
	TimedOut bool          // the type's Timeout ended it
	Started  time.Time
	Finished time.Time
}

// RunAttempt runs attempt j.Attempt of j with h as a Pool would, without a
// database: under the type's Timeout, behind recover, within its
// GiveUpAfter budget, mapping the error to done, retry (with the type's
// backoff, or a RetryAfter's delay) or dead, and masking the output and
// error text with its RedactFunc. j is changed only by h. It is for tests
// and tools; package queuetest wraps it with a fake clock.
func RunAttempt(ctx context.Context, h Handler, j *Job, cfg AttemptConfig) AttemptResult {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	tc := cfg.Type
	r := AttemptResult{Started: cfg.Clock.Now()}
	giveUpAt := tc.giveUpAt(j)
	if !giveUpAt.IsZero() && !r.Started.Before(giveUpAt) {
		r.Outcome, r.Finished = OutcomeDead, r.Started
		r.Err = &GaveUpError{After: tc.GiveUpAfter}
		return r
	}
	var err error
	if h == nil {
		err = Permanent(fmt.Errorf("unknown job type %q: no handler registered", j.Type))
	} else {
		r.TimedOut, err = call(ctx, registered{h: h, tc: tc}, j)
	}
	r.Finished = cfg.Clock.Now()
	r.Output = string(j.Output())
	var gaveUp error
	r.Outcome, r.RetryAt, gaveUp = fate(err, j, tc, giveUpAt, r.Finished, cfg.Jitter)
	r.Err = cmp.Or(gaveUp, err)
	if r.Outcome == OutcomeRetry {
		r.RetryIn = r.RetryAt.Sub(r.Finished)
	} else {
		r.RetryAt = time.Time{}
	}
	if tc.RedactFunc != nil {
		r.Output = tc.RedactFunc(j, r.Output)
		if r.Err != nil {
			r.Err = redactedError{text: tc.RedactFunc(j, r.Err.Error()), err: r.Err}
		}
	}
	return r
}

// redactedError is an error whose text a RedactFunc masked; errors.Is and
// errors.As still see the original.
type redactedError struct {
	text string
	err  error
}

func (e redactedError) Error() string { return e.text }
func (e redactedError) Unwrap() error { return e.err }
