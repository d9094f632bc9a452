package queue

import (
	"context"
	"strings"
	"sync"

	"github.com/scheduler-run/scheduler/queue/store"
)

// CancelledError is the context.Cause of an attempt stopped by RequestCancel;
// it unwraps to context.Canceled. A command gets SIGTERM, then SIGKILL after
// its kill grace. The job ends cancelled.
type CancelledError struct {
	By string // who asked, as given to RequestCancel
}

func (e *CancelledError) Error() string { return "cancelled by " + e.By }
func (e *CancelledError) Unwrap() error { return context.Canceled }

// stops holds the cancel funcs of a pool's running attempts; it is safe for
// concurrent use.
type stops struct {
	mu      sync.Mutex
	running map[int64]runningAttempt  // by job id
	early   map[int64]*CancelledError // requests on prefetched jobs; replaced at each delivery
}

type runningAttempt struct {
	attempt int
	cancel  context.CancelCauseFunc
}

// start registers j's attempt, or returns the request made before it started.
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

func (s *stops) end(j *Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.running[j.ID]; ok && a.attempt == j.Attempt {
		delete(s.running, j.ID)
	}
}

// deliver cancels the running attempts reqs name, keeps the others for
// when they start, and returns the requests that cancelled an attempt.
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

// stopCancelled cancels this pool's attempts with a cancel request, on the
// watch's wake-up and at each heartbeat.
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

// cancelledText is the error of an attempt stopped by e: the handler's,
// prefixed with e unless it names it.
func cancelledText(e *CancelledError, errText string) string {
	switch {
	case errText == "":
		return e.Error()
	case strings.Contains(errText, e.Error()):
		return errText
	}
	return e.Error() + ": " + errText
}
