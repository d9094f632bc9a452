package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// logResult logs a committed result r; fenced tells whether its fence held.
func (p *Pool) logResult(ctx context.Context, r store.Result, fenced bool) {
	if fenced && r.Outcome == OutcomeDone && !p.log.Enabled(ctx, slog.LevelInfo) {
		return // spare building a line nobody keeps
	}
	j := r.Job
	attrs := []any{"job_id", j.ID, "job_type", j.Type, "key", j.Key, "attempt", j.Attempt, "duration", r.Finished.Sub(r.Started)}
	if !fenced {
		p.log.WarnContext(ctx, "stale result rejected", append(attrs, "outcome", r.Outcome, "err", r.Error)...)
		return
	}
	switch r.Outcome {
	case OutcomeDone:
		if reg, ok := p.lookup(j.Type); ok && reg.tc.LogOutput && r.Output != "" {
			attrs = append(attrs, "output", tail(r.Output, 512))
		}
		p.log.InfoContext(ctx, "job done", attrs...)
	case OutcomeRetry:
		p.log.WarnContext(ctx, "job retry scheduled", append(attrs, "run_at", r.RetryAt, "err", r.Error, "output", tail(r.Output, 512))...)
	case OutcomeDead:
		p.log.ErrorContext(ctx, "job dead", append(attrs, "err", r.Error, "output", tail(r.Output, 512))...)
	case OutcomeReleased:
		p.log.InfoContext(ctx, "job released at shutdown", attrs...)
	case OutcomeCancelled:
		p.log.InfoContext(ctx, "job cancelled", append(attrs, "err", r.Error)...)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (p *Pool) worker(ctx context.Context, name string) {
	for j := range p.work {
		if p.tracer != nil {
			p.results <- p.traced(ctx, name, j)
			continue
		}
		p.results <- p.redact(p.execute(ctx, name, j))
	}
}

// redact masks r's secrets with its type's RedactFunc before anything stores
// or logs them.
func (p *Pool) redact(r store.Result) store.Result {
	reg, ok := p.lookup(r.Job.Type)
	if !ok || reg.tc.RedactFunc == nil {
		return r
	}
	r.Output = reg.tc.RedactFunc(r.Job, r.Output)
	r.Error = reg.tc.RedactFunc(r.Job, r.Error)
	return r
}

func (p *Pool) execute(ctx context.Context, worker string, j *Job) store.Result {
	r := store.Result{Job: j, Worker: worker, Started: p.clock.Now()}
	if p.stopping.Load() {
		// Claimed just before shutdown, never started.
		r.Outcome, r.Finished = OutcomeReleased, r.Started
		return r
	}
	if err := p.keys.doomed(j.ID); err != nil {
		// Its rate limit's key panicked.
		r.Outcome, r.Finished, r.Error = OutcomeDead, r.Started, err.Error()
		return r
	}
	// A cancel request cancels ctx with a *CancelledError.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if e := p.stops.start(j, cancel); e != nil {
		// Cancelled while claimed, waiting for a worker.
		r.Outcome, r.Finished, r.Error = OutcomeCancelled, r.Started, e.Error()
		return r
	}
	defer p.stops.end(j)
	lo := &liveOutput{lives: p.lives, job: j, started: r.Started}
	ctx = context.WithValue(ctx, liveKey{}, lo)
	reg, ok := p.lookup(j.Type)
	giveUpAt := reg.tc.giveUpAt(j)
	if ok && !giveUpAt.IsZero() && !r.Started.Before(giveUpAt) {
		// Past its budget: dead instead of started.
		r.Outcome, r.Finished = OutcomeDead, r.Started
		r.Error = (&GaveUpError{After: reg.tc.GiveUpAfter}).Error()
		return r
	}
	var err error
	if !ok {
		err = Permanent(fmt.Errorf("unknown job type %q: no handler registered", j.Type))
	} else {
		p.busy.Add(1)
		r.TimedOut, err = call(ctx, reg, j)
		p.busy.Add(-1)
	}
	r.Finished = p.clock.Now()
	lo.end()
	r.Output = string(j.Output())
	if r.Output == "" {
		r.Output = string(lo.tail())
	}
	if err != nil {
		r.Error = err.Error()
	}
	if e, ok := errors.AsType[*CancelledError](context.Cause(ctx)); ok && err != nil {
		r.Outcome, r.Error = OutcomeCancelled, cancelledText(e, r.Error)
		return r
	}
	if err != nil && p.hardStop.Load() {
		r.Outcome = OutcomeReleased
		return r
	}
	if re, ok := errors.AsType[*RetryError](err); ok && reg.tc.Rate.Starts > 0 && re.After > 0 {
		p.pauseRate(ctx, reg.tc.Rate, j, r.Finished.Add(re.After))
	}
	var gaveUp error
	r.Outcome, r.RetryAt, gaveUp = fate(err, j, reg.tc, giveUpAt, r.Finished, p.cfg.jitter)
	if gaveUp != nil {
		r.Error = gaveUp.Error()
	}
	return r
}

// fate is the outcome of an attempt of j that finished at finished with err,
// and when it retries; a non-nil gaveUp replaces err when a retry would
// start past giveUpAt, the end of the job's budget (zero: none).
func fate(err error, j *Job, tc TypeConfig, giveUpAt, finished time.Time, jitter func(time.Duration) time.Duration) (outcome Outcome, retryAt time.Time, gaveUp error) {
	outcome, delay := decide(err, j.Attempt, j.MaxAttempts, tc, jitter)
	retryAt = finished.Add(delay)
	if outcome == OutcomeRetry && !giveUpAt.IsZero() && !retryAt.Before(giveUpAt) {
		// The retry would start when no attempt may.
		return OutcomeDead, retryAt, &GaveUpError{After: tc.GiveUpAfter, Err: err}
	}
	return outcome, retryAt, nil
}

// pauseRate pauses the rate limit of j's type, or key, until until, as the
// remote side asked. It is written before the result, so the next claim sees
// it; a failure is only logged.
func (p *Pool) pauseRate(ctx context.Context, r Rate, j *Job, until time.Time) {
	l := r.limit()
	var key string
	if r.Key != nil {
		var err error
		if key, err = r.key(j.Payload); err != nil {
			p.log.ErrorContext(ctx, "pause rate limit failed", "job_id", j.ID, "type", j.Type, "err", err)
			return
		}
	}
	ctx, cancel := context.WithTimeout(ctx, txTimeout)
	defer cancel()
	if err := p.e.PauseRate(ctx, j.Type, key, l.PauseTAT(until)); err != nil {
		p.log.ErrorContext(ctx, "pause rate limit failed", "job_id", j.ID, "type", j.Type, "err", err)
		return
	}
	p.log.InfoContext(ctx, "rate limit paused", "job_id", j.ID, "type", j.Type, "key", key, "until", until)
}

// call runs the handler behind recover, under the type's timeout, and reports
// whether the timeout ended a failed attempt.
func call(ctx context.Context, reg registered, j *Job) (timedOut bool, err error) {
	if reg.tc.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, reg.tc.Timeout, &TimeoutError{Timeout: reg.tc.Timeout})
		defer cancel()
		defer func() { timedOut = err != nil && isTimeout(context.Cause(ctx)) }()
	}
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return false, reg.h.Work(ctx, j)
}
