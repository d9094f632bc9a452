package queue

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// LiveOutputEvery is how often a Pool stores the output of its running jobs
// while it changes; a job's first store waits until it has run this long,
// so shorter jobs never store any.
const LiveOutputEvery = store.LiveOutputEvery

// OutputWriter returns the writer of the running attempt's output, for a
// handler that reports progress: the last MaxOutput bytes written to it are
// shown on the job's page as they grow (its Pool stores them, redacted by
// the type's RedactFunc, every LiveOutputEvery while they change) and are
// the attempt's output unless the handler calls Job.SetOutput. Outside a
// Pool's handler it discards. It is safe for concurrent use; writes after
// the handler returns are dropped.
func OutputWriter(ctx context.Context) io.Writer {
	if lo, ok := ctx.Value(liveKey{}).(*liveOutput); ok {
		return lo
	}
	return io.Discard
}

type liveKey struct{}

// attemptRef names one attempt of a job.
type attemptRef struct {
	id      int64
	attempt int
}

// liveOutput is one running attempt's output so far. Its first write
// registers it with the pool's lives; the attempt's end unregisters it.
type liveOutput struct {
	lives   *lives
	job     *Job
	started time.Time

	mu         sync.Mutex
	buf        []byte // the tail: its last MaxOutput bytes
	version    uint64 // writes so far
	stored     uint64 // the version the pool last stored
	flagged    bool   // the pool was told of a change since its last snapshot
	registered bool
	ended      bool
}

// Write keeps the tail of b and tells the pool of the change. It never
// fails.
func (lo *liveOutput) Write(b []byte) (int, error) {
	lo.mu.Lock()
	defer lo.mu.Unlock()
	if lo.ended || len(b) == 0 {
		return len(b), nil
	}
	lo.buf = appendTail(lo.buf, b, store.MaxOutput)
	lo.version++
	if !lo.registered {
		lo.registered = true
		lo.lives.add(lo)
	}
	if !lo.flagged {
		lo.flagged = true
		select {
		case lo.lives.changed <- struct{}{}:
		default:
		}
	}
	return len(b), nil
}

// appendTail appends b to buf and keeps about its last max bytes, growing to
// twice max before moving bytes: amortised O(1) per byte.
func appendTail(buf, b []byte, max int) []byte {
	if len(b) >= max {
		return append(buf[:0], b[len(b)-max:]...)
	}
	if len(buf)+len(b) > 2*max {
		keep := max - len(b)
		buf = buf[:copy(buf, buf[len(buf)-keep:])]
	}
	return append(buf, b...)
}

// tail returns a copy of the last MaxOutput bytes written.
func (lo *liveOutput) tail() []byte {
	lo.mu.Lock()
	defer lo.mu.Unlock()
	return lo.tailLocked()
}

func (lo *liveOutput) tailLocked() []byte {
	b := lo.buf
	if len(b) > store.MaxOutput {
		b = b[len(b)-store.MaxOutput:]
	}
	return append([]byte(nil), b...)
}

// end drops later writes and unregisters lo.
func (lo *liveOutput) end() {
	lo.mu.Lock()
	lo.ended = true
	registered := lo.registered
	lo.mu.Unlock()
	if registered {
		lo.lives.remove(lo)
	}
}

// lives are a pool's running attempts that wrote output; it is safe for
// concurrent use. A liveOutput's lock is taken before lives', never while
// lives' is held.
type lives struct {
	mu      sync.Mutex
	m       map[attemptRef]*liveOutput
	changed chan struct{} // a coalesced value after an attempt's output changed
}

func newLives() *lives {
	return &lives{m: map[attemptRef]*liveOutput{}, changed: make(chan struct{}, 1)}
}

func (ls *lives) add(lo *liveOutput) {
	ls.mu.Lock()
	ls.m[attemptRef{lo.job.ID, lo.job.Attempt}] = lo
	ls.mu.Unlock()
}

func (ls *lives) remove(lo *liveOutput) {
	ls.mu.Lock()
	delete(ls.m, attemptRef{lo.job.ID, lo.job.Attempt})
	ls.mu.Unlock()
}

func (ls *lives) all() []*liveOutput {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := make([]*liveOutput, 0, len(ls.m))
	for _, lo := range ls.m {
		out = append(out, lo)
	}
	return out
}

// liveSnapshot is what a turn stores of the running attempts' output.
type liveSnapshot struct {
	outputs  []store.LiveOutput
	versions []uint64      // the versions outputs hold, in order
	from     []*liveOutput // whose they are, in order
}

// snapshot returns the changed output of attempts that have run for at
// least every by now, not redacted; next is when one of the others
// becomes due (zero: none changed).
func (ls *lives) snapshot(now time.Time, every time.Duration) (s liveSnapshot, next time.Time) {
	for _, lo := range ls.all() {
		lo.mu.Lock()
		switch due := lo.started.Add(every); {
		case lo.ended || lo.version == lo.stored:
		case due.After(now):
			if next.IsZero() || due.Before(next) {
				next = due
			}
		default:
			lo.flagged = false
			s.outputs = append(s.outputs, store.LiveOutput{JobID: lo.job.ID, Attempt: lo.job.Attempt, Output: string(lo.tailLocked())})
			s.versions = append(s.versions, lo.version)
			s.from = append(s.from, lo)
		}
		lo.mu.Unlock()
	}
	return s, next
}

// stored notes that s is stored.
func (s liveSnapshot) stored() {
	for i, lo := range s.from {
		lo.mu.Lock()
		lo.stored = max(lo.stored, s.versions[i])
		lo.mu.Unlock()
	}
}

// liveState is what the loop knows of its running attempts' output.
type liveState struct {
	wanted bool      // an attempt's output changed since the last store
	at     time.Time // the next store is not before this
	// stored are the attempts whose output a committed turn stored: their
	// results delete it.
	stored map[attemptRef]bool
}

// liveDue is when the loop must store output, or zero.
func (l *loop) liveDue() time.Time {
	if !l.live.wanted {
		return time.Time{}
	}
	return l.p.lives.due(l.live.at)
}

// due is when the first changed attempt may be stored, not before at; zero
// when none changed.
func (ls *lives) due(at time.Time) time.Time {
	var next time.Time
	for _, lo := range ls.all() {
		lo.mu.Lock()
		if !lo.ended && lo.version != lo.stored {
			if due := lo.started.Add(LiveOutputEvery); next.IsZero() || due.Before(next) {
				next = due
			}
		}
		lo.mu.Unlock()
	}
	if !next.IsZero() && next.Before(at) {
		next = at
	}
	return next
}

// liveOutputs returns the turn's output to store, redacted, when its time
// has come.
func (l *loop) liveOutputs(now time.Time) liveSnapshot {
	if !l.live.wanted || now.Before(l.live.at) {
		return liveSnapshot{}
	}
	s, next := l.p.lives.snapshot(now, LiveOutputEvery)
	l.live.wanted = !next.IsZero()
	for i, o := range s.outputs {
		if reg, ok := l.p.lookup(s.from[i].job.Type); ok && reg.tc.RedactFunc != nil {
			s.outputs[i].Output = reg.tc.RedactFunc(s.from[i].job, o.Output)
		}
	}
	return s
}

// liveEnded returns the attempts among results whose output is stored.
func (l *loop) liveEnded(results []store.Result) []store.LiveOutput {
	if len(l.live.stored) == 0 {
		return nil
	}
	var out []store.LiveOutput
	for _, r := range results {
		if l.live.stored[attemptRef{r.Job.ID, r.Job.Attempt}] {
			out = append(out, store.LiveOutput{JobID: r.Job.ID, Attempt: r.Job.Attempt})
		}
	}
	return out
}

// liveCommitted notes a committed turn's stores and deletes.
func (l *loop) liveCommitted(now time.Time, s liveSnapshot, ended []store.LiveOutput) {
	for _, e := range ended {
		delete(l.live.stored, attemptRef{e.JobID, e.Attempt})
	}
	if len(s.outputs) == 0 {
		return
	}
	s.stored()
	if l.live.stored == nil {
		l.live.stored = map[attemptRef]bool{}
	}
	for _, o := range s.outputs {
		l.live.stored[attemptRef{o.JobID, o.Attempt}] = true
	}
	l.live.at = now.Add(LiveOutputEvery)
}

// liveFailed keeps a failed turn's output for the next.
func (l *loop) liveFailed(s liveSnapshot) {
	if len(s.outputs) > 0 {
		l.live.wanted = true
	}
}
