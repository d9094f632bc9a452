package queue

import (
	"context"
	"strings"
	"sync"

	"github.com/scheduler-run/scheduler/queue/store"
)

// CancelledError is the cause (context.Cause) of the context of an attempt
// stopped by RequestCancel: a command task's process group gets SIGTERM,
// then SIGKILL after its kill grace, as at a timeout. It unwraps to
// context.Canceled. The job ends cancelled, and is not retried.
type CancelledError struct {
	By string // who asked, as given to RequestCancel
}

func (e *CancelledError) Error() string { return "cancelled by " + e.By }
func (e *CancelledError) Unwrap() error { return context.Canceled }

// stops holds the contexts of a pool's running attempts, so that a cancel
// request reaches them. It is safe for concurrent use: workers start and end
// attempts, the loop delivers requests.
type stops struct {
	mu      sync.Mutex
	running map[int64]runningAttempt // by job id
	// early holds requests on jobs claimed but not yet started (prefetched):
	// they end cancelled without running. Each delivery replaces it, so a
	// request on a job that has since ended is dropped.
	early map[int64]*CancelledError
}

type runningAttempt struct {
	attempt int
	cancel  context.CancelCauseFunc
}

// start registers j's attempt, whose context cancel cancels. It returns the
// cancel requested before the attempt started, if any.
func (s *stops) start(j *Job, cancel context.CancelCauseFunc) *CancelledError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.early[j.ID]; e != nil {
		delete(s.early, j.ID)
		return e
	}
	if s.running == nil {
		s.running = map[int64]runningAttempt{}
	}
	s.running[j.ID] = runningAttempt{attempt: j.Attempt, cancel: cancel}
	return nil
}

// end forgets j's attempt.
func (s *stops) end(j *Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.running[j.ID]; ok && a.attempt == j.Attempt {
		delete(s.running, j.ID)
	}
}

// deliver cancels the running attempts that reqs name and keeps the others
// for when they start. It returns the requests that cancelled an attempt.
func (s *stops) deliver(reqs []store.CancelRequest) []store.CancelRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var delivered []store.CancelRequest
	early := map[int64]*CancelledError{}
	for _, r := range reqs {
		e := &CancelledError{By: r.By}
		if a, ok := s.running[r.ID]; ok && a.attempt == r.Attempt {
			a.cancel(e)
			delete(s.running, r.ID)
			delivered = append(delivered, r)
			continue
		}
		early[r.ID] = e
	}
	s.early = early
	return delivered
}

// stopCancelled looks for cancel requests on the jobs this pool runs and
// cancels their attempts. The loop calls it when another connection
// committed (the watch's wake-up) and at each heartbeat, as a fallback.
func (l *loop) stopCancelled(ctx context.Context) {
	p := l.p
	if l.inflight == 0 {
		return
	}
	reqs, err := p.e.CancelRequests(ctx, p.cfg.Owner)
	if err != nil {
		if ctx.Err() == nil {
			p.log.WarnContext(ctx, "look for cancel requests", "err", err)
		}
		return
	}
	for _, r := range p.stops.deliver(reqs) {
		p.log.InfoContext(ctx, "job cancel requested, stopping it", "job_id", r.ID, "attempt", r.Attempt, "by", r.By)
	}
}

// cancelledText is the error recorded for an attempt stopped by e: the
// handler's error, which for a command already names the cause, prefixed
// with who cancelled it when it does not.
func cancelledText(e *CancelledError, errText string) string {
	switch {
	case errText == "":
		return e.Error()
	case strings.Contains(errText, e.Error()):
		return errText
	}
	return e.Error() + ": " + errText
}
