package schedule

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// maxAdvanceRetries bounds retries when another beat moved a cursor.
const maxAdvanceRetries = 5

// pass advances every schedule to now and returns the next instant due
// (zero if none). Each schedule commits with a compare-and-set of its
// cursor; those whose cursor another beat moved are read again and
// retried together.
func (b *Beat) pass(ctx context.Context, now time.Time) (time.Time, error) {
	b.mu.Lock()
	p := &passRun{cfg: b.cfg, since: maps.Clone(b.since), now: now}
	b.mu.Unlock()
	order := b.cursors.forConfig(p.cfg)
	todo := make([]int, len(order))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; len(todo) > 0; attempt++ {
		if attempt > maxAdvanceRetries {
			for _, i := range todo {
				p.errs = append(p.errs, fmt.Errorf("schedule %s: cursor moved %d times: %w", order[i].Name, attempt, store.ErrCursorMoved))
			}
			break
		}
		var ok bool
		if todo, ok = b.round(ctx, p, todo, attempt == 0); !ok {
			break
		}
	}
	b.logStarted(ctx, p)
	return p.next, errors.Join(p.errs...)
}

// maxStartedLines bounds the "schedule started" lines logged at info in
// one pass; the others go to debug and a "schedules started" line sums
// them up.
const maxStartedLines = 10

// logStarted sums up a pass that started more schedules than it logged
// at info: how many, and the first run due among them.
func (b *Beat) logStarted(ctx context.Context, p *passRun) {
	if p.started <= maxStartedLines {
		return
	}
	b.log.InfoContext(ctx, "schedules started", logKeyStarted, p.started, logKeyLogged, maxStartedLines, logKeyFirstRun, p.firstRun)
}

// passRun is what one pass gathers over its rounds.
type passRun struct {
	cfg   *config.Config
	since map[string]time.Time // the restart marks; see advance
	now   time.Time
	next  time.Time
	errs  []error

	started  int       // cursors created
	firstRun time.Time // the earliest next run of those schedules
}

func (p *passRun) earliest(at time.Time) {
	if !at.IsZero() && (p.next.IsZero() || at.Before(p.next)) {
		p.next = at
	}
}

// round plans and commits todo, positions in the pass's schedules by
// name, and returns those whose cursor another beat moved, in order; false
// when reading the cursors or a whole commit failed. A pass's first round
// notes the cursors it reads in b.cursors.
func (b *Beat) round(ctx context.Context, p *passRun, todo []int, first bool) ([]int, bool) {
	m := &b.cursors
	seen := func(store.Cursor) {}
	if first {
		m.startPass()
		seen = func(c store.Cursor) { m.other(c.Schedule, c.At) }
	}
	cursors := readCursors(ctx, b.q, seen)
	var lost []int
	failed := false
	plan := func(yield func(*tick)) {
		for _, i := range todo {
			s := m.order[i]
			cur, ok, err := cursors.of(s.Name)
			if err != nil {
				p.errs = append(p.errs, err)
				failed = true
				return
			}
			if first && ok {
				m.read(i, cur.At)
			}
			b.notePause(ctx, i, cur)
			t, at := b.advance(p.cfg, s, cur, ok, p.since, p.now)
			if t == nil || t.moved == nil {
				m.left(i, cur.At) // as read, unless the tick commits
			}
			if t == nil {
				p.earliest(at)
				continue
			}
			t.i = i
			yield(t)
		}
	}
	b.commitTicks(ctx, plan, func(t *tick, r store.AdvanceResult) {
		switch {
		case errors.Is(r.Err, store.ErrCursorMoved):
			lost = append(lost, t.i)
		case r.Err != nil:
			p.errs = append(p.errs, r.Err)
		default:
			b.committed(ctx, p, t, r.Jobs)
		}
	}, func(err error) {
		p.errs = append(p.errs, err)
		failed = true
	})
	if err := cursors.close(); err != nil && !failed {
		p.errs = append(p.errs, err)
		failed = true
	}
	if failed {
		return nil, false
	}
	slices.Sort(lost)
	return lost, true
}

// committed logs what tick t did and moves the pass's view of its cursor.
func (b *Beat) committed(ctx context.Context, p *passRun, t *tick, res []queue.Enqueued) {
	if t.moved != nil {
		b.committedMove(ctx, p, t)
	}
	if len(t.due) > 0 {
		b.materialised(ctx, t, res)
	}
	b.cursors.left(t.i, t.to)
	p.earliest(t.next)
}

// Bounds of the rows (jobs, skips, cursors) of one AdvanceBatch call.
const (
	// minCommitRows: below it a batch waits for more ticks even when the
	// writer is idle, since each commit rewrites the pages all batches
	// share.
	minCommitRows = 250
	// maxCommitRows, the store's transaction size: planning waits at it.
	maxCommitRows = store.AdvanceBatchRows
)

// batchErr is an AdvanceBatch call's failure: err, else the first result
// error other than ErrCursorMoved, else nil.
func batchErr(res []store.AdvanceResult, err error) error {
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil && !errors.Is(r.Err, store.ErrCursorMoved) {
			return r.Err
		}
	}
	return nil
}

// commitTicks commits the ticks plan yields, in order, by AdvanceBatch
// calls on a goroutine of its own. It calls result with each tick's
// result, in order, on the calling goroutine: between two ticks of the
// plan for the batches already written, and for the others once plan
// returns; a call that failed as a whole goes once to failed instead.
//
// The goroutine lets planning and writing overlap. A batch goes as soon
// as the writer is free and it holds minCommitRows, up to maxCommitRows.
// A written batch's ticks are let go as soon as their results are taken,
// so a pass of many schedules holds a few batches of ticks at a time, not
// all of them.
func (b *Beat) commitTicks(ctx context.Context, plan func(yield func(*tick)), result func(*tick, store.AdvanceResult), failed func(error)) {
	type batch struct {
		ticks []*tick
		res   []store.AdvanceResult
		err   error
		done  chan struct{}
	}
	work := make(chan *batch) // unbuffered: a send is taken only by an idle writer
	go func() {
		for bt := range work {
			advs := make([]store.Advance, len(bt.ticks))
			for i, t := range bt.ticks {
				advs[i] = t.adv
			}
			bt.res, bt.err = b.q.AdvanceBatch(ctx, advs)
			if b.wroteFunc != nil {
				b.wroteFunc(batchErr(bt.res, bt.err))
			}
			close(bt.done)
		}
	}()
	var sent []*batch
	take := func(bt *batch) {
		if bt.err != nil {
			failed(bt.err)
			return
		}
		for i, t := range bt.ticks {
			result(t, bt.res[i])
		}
	}
	takeWritten := func() {
		for len(sent) > 0 {
			select {
			case <-sent[0].done:
				take(sent[0])
				sent[0] = nil
				sent = sent[1:]
			default:
				return
			}
		}
	}
	cur, rows := &batch{done: make(chan struct{})}, 0
	send := func() {
		work <- cur
		sent = append(sent, cur)
		cur, rows = &batch{done: make(chan struct{})}, 0
	}
	plan(func(t *tick) {
		takeWritten()
		cur.ticks = append(cur.ticks, t)
		rows += 1 + len(t.adv.Jobs) + len(t.adv.Skips)
		switch {
		case rows >= maxCommitRows:
			send()
		case rows >= minCommitRows:
			select {
			case work <- cur:
				sent = append(sent, cur)
				cur, rows = &batch{done: make(chan struct{})}, 0
			default: // the writer is busy: plan more meanwhile
			}
		}
	})
	if len(cur.ticks) > 0 {
		send()
	}
	close(work)
	for _, bt := range sent {
		<-bt.done
		take(bt)
	}
}

// cursorReader reads the cursors by name while the pass plans in that
// order, so planning and writing start at the first row, not the last.
type cursorReader struct {
	next func() (store.Cursor, bool)
	stop func()
	head store.Cursor // the next cursor, if more
	more bool
	err  error // the read's, once more is false
	seen func(store.Cursor)
}

// readCursors starts reading q's cursors; seen gets each in order.
func readCursors(ctx context.Context, q *queue.Client, seen func(store.Cursor)) *cursorReader {
	r := &cursorReader{seen: seen}
	r.next, r.stop = iter.Pull(func(yield func(store.Cursor) bool) {
		r.err = q.CursorsByName(ctx, yield)
	})
	r.head, r.more = r.next()
	return r
}

// of returns the cursor of name, if any. Names must come in byte order.
func (r *cursorReader) of(name string) (store.Cursor, bool, error) {
	for r.more && r.head.Schedule < name {
		r.seen(r.head)
		r.head, r.more = r.next()
	}
	if r.more && r.head.Schedule == name {
		c := r.head
		r.seen(c)
		r.head, r.more = r.next()
		return c, true, nil
	}
	if !r.more && r.err != nil {
		return store.Cursor{}, false, r.err
	}
	return store.Cursor{}, false, nil
}

// close passes the rest to seen, ends the read and returns its error.
func (r *cursorReader) close() error {
	for r.more {
		r.seen(r.head)
		r.head, r.more = r.next()
	}
	r.stop()
	return r.err
}
