package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// recorder tracks handler invocations per job sequence number. It is safe
// for concurrent use by the pool's workers.
type recorder struct {
	base     time.Time
	counts   []atomic.Int32
	enqAt    []atomic.Int64 // ns since base, set just before Enqueue
	startLat []atomic.Int64 // ns from enqueue to the first handler start
	startAt  []atomic.Int64 // ns since base of the first handler start
	distinct atomic.Int64
	bogus    atomic.Int64 // handler saw a seq out of range
	last     atomic.Int64 // ns since base of the last first-time handling
	allDone  chan struct{}
	n        int
}

func newRecorder(n int) *recorder {
	return &recorder{
		base:     time.Now(),
		counts:   make([]atomic.Int32, n),
		enqAt:    make([]atomic.Int64, n),
		startLat: make([]atomic.Int64, n),
		startAt:  make([]atomic.Int64, n),
		allDone:  make(chan struct{}),
		n:        n,
	}
}

func (r *recorder) now() int64 { return int64(time.Since(r.base)) }

// handle is the no-op job body: it only records that seq ran.
func (r *recorder) handle(seq int) {
	now := r.now()
	if seq < 0 || seq >= r.n {
		r.bogus.Add(1)
		return
	}
	if r.counts[seq].Add(1) == 1 {
		r.startAt[seq].Store(now)
		r.startLat[seq].Store(now - r.enqAt[seq].Load())
		r.last.Store(now)
		if r.distinct.Add(1) == int64(r.n) {
			close(r.allDone)
		}
	}
}

// enqueuedElsewhere sets the enqueue time of seq to wallNs, the wall clock
// (Unix ns) of another process on this host, after the job ran, and
// recomputes its latency.
func (r *recorder) enqueuedElsewhere(seq int, wallNs int64) {
	if seq < 0 || seq >= r.n {
		return
	}
	at := wallNs - r.base.UnixNano()
	r.enqAt[seq].Store(at)
	if r.counts[seq].Load() > 0 {
		r.startLat[seq].Store(r.startAt[seq].Load() - at)
	}
}

// tally returns extra executions (beyond the first, plus any of an unknown
// seq) and jobs that never ran.
func (r *recorder) tally() (dup, lost int) {
	for i := range r.counts {
		c := int(r.counts[i].Load())
		if c == 0 {
			lost++
		} else if c > 1 {
			dup += c - 1
		}
	}
	return dup + int(r.bogus.Load()), lost
}

// errLog counts the warnings and errors the queue logs (failed pool writes,
// retries, reclaimed leases, stale results: none should occur with a no-op
// handler) and copies the first few to stderr.
type errLog struct {
	mu     sync.Mutex
	w      io.Writer
	n      int
	copies int
}

// maxLoggedErrs is how many counted records are copied to stderr.
const maxLoggedErrs = 5

func newErrLog(w io.Writer) *errLog { return &errLog{w: w} }

func (l *errLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// logger returns a logger that feeds l; nil for a nil l.
func (l *errLog) logger() *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(&errHandler{l: l})
}

// errHandler is the slog.Handler behind errLog.logger. Attributes are kept
// only as text for the stderr copy.
type errHandler struct {
	l     *errLog
	attrs []slog.Attr
}

func (h *errHandler) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelWarn }

func (h *errHandler) Handle(_ context.Context, r slog.Record) error {
	h.l.mu.Lock()
	defer h.l.mu.Unlock()
	h.l.n++
	if h.l.copies >= maxLoggedErrs {
		return nil
	}
	h.l.copies++
	line := "scheduler-bench: queue " + r.Level.String() + ": " + r.Message
	for _, a := range h.attrs {
		line += " " + a.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	_, err := fmt.Fprintln(h.l.w, line)
	return err
}

func (h *errHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &errHandler{l: h.l, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h *errHandler) WithGroup(string) slog.Handler { return h }
