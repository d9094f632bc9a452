package queue

import (
	"errors"
	"math/rand/v2"
	"time"
)

// Default retry policy of a TypeConfig.
const (
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = time.Hour
)

// decide maps a handler's result to the job's fate: the one place that
// classifies failures. jitter returns a uniform duration in [0, n); nil means
// math/rand.
func decide(err error, attempt, maxAttempts int, tc TypeConfig, jitter func(n time.Duration) time.Duration) (Outcome, time.Duration) {
	if err == nil {
		return OutcomeDone, 0
	}
	if _, ok := errors.AsType[*PermanentError](err); ok {
		return OutcomeDead, 0
	}
	if attempt >= maxAttempts {
		return OutcomeDead, 0
	}
	if re, ok := errors.AsType[*RetryError](err); ok {
		return OutcomeRetry, max(re.After, 0)
	}
	return OutcomeRetry, backoff(attempt, tc.Backoff, tc.MaxBackoff, jitter)
}

// backoff is the delay after failed attempt n (1-based): base doubling,
// capped at maxDelay, jittered within its upper half ("equal jitter"), so the
// first retry waits about base and gaps grow.
func backoff(n int, base, maxDelay time.Duration, jitter func(n time.Duration) time.Duration) time.Duration {
	if base <= 0 {
		base = DefaultBackoff
	}
	if maxDelay <= 0 {
		maxDelay = DefaultMaxBackoff
	}
	if jitter == nil {
		jitter = func(n time.Duration) time.Duration { return rand.N(n) }
	}
	d := base
	for i := 1; i < n && d < maxDelay; i++ {
		if d > maxDelay/2 {
			d = maxDelay
			break
		}
		d *= 2
	}
	d = min(d, maxDelay)
	half := d / 2
	if half <= 0 {
		return d
	}
	return d - half + jitter(half+1)
}
