package schedule

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// maxAdvanceRetries bounds how often one pass retries a schedule whose
// cursor another beat moved.
const maxAdvanceRetries = 5

// pass advances every schedule to now and returns the earliest instant
// that will be due next (zero if none). The instants due are planned in
// the order of the schedules' names and committed by queue.AdvanceBatch
// calls, each schedule with its own compare-and-set of its cursor (see
// commitTicks); the schedules whose cursor another beat moved are read
// again and retried together.
func (b *Beat) pass(ctx context.Context, now time.Time) (time.Time, error) {
	b.mu.Lock()
	p := &passRun{cfg: b.cfg, since: maps.Clone(b.since), now: now}
	b.mu.Unlock()
	todo := b.byName(p.cfg)
	for attempt := 0; len(todo) > 0; attempt++ {
		if attempt > maxAdvanceRetries {
			for _, s := range todo {
				p.errs = append(p.errs, fmt.Errorf("schedule %s: cursor moved %d times: %w", s.Name, attempt, store.ErrCursorMoved))
			}
			break
		}
		var ok bool
		if todo, ok = b.round(ctx, p, todo, attempt == 0); !ok {
			break
		}
	}
	return p.next, errors.Join(p.errs...)
}

// passRun is what one pass gathers over its rounds.
type passRun struct {
	cfg   *config.Config
	since map[string]time.Time // the restart marks (see advance)
	now   time.Time
	next  time.Time // the earliest instant due next
	errs  []error
}

// earliest notes an instant due next.
func (p *passRun) earliest(at time.Time) {
	if !at.IsZero() && (p.next.IsZero() || at.Before(p.next)) {
		p.next = at
	}
}

// round plans and commits the schedules of todo, in the order of their
// names, from the cursors it reads, and returns those whose cursor another
// beat moved meanwhile, in the same order; false when reading the cursors
// or a commit failed as a whole. The first round of a pass keeps the
// cursors it reads as b.before and b.after.
func (b *Beat) round(ctx context.Context, p *passRun, todo []*config.Schedule, first bool) ([]*config.Schedule, bool) {
	seen := func(store.Cursor) {}
	if first {
		// Sized as the last pass found them, so that they do not grow
		// entry by entry.
		n := max(len(b.before), len(todo))
		b.before, b.after = make(map[string]store.Cursor, n), make(map[string]store.Cursor, n)
		seen = func(c store.Cursor) {
			b.before[c.Schedule] = c
			b.after[c.Schedule] = c
		}
	}
	cursors := readCursors(ctx, b.q, seen)
	var lost []*config.Schedule
	failed := false
	plan := func(yield func(*tick)) {
		for _, s := range todo {
			cur, ok, err := cursors.of(s.Name)
			if err != nil {
				p.errs = append(p.errs, err)
				failed = true
				return
			}
			b.notePause(ctx, s, cur)
			if t, at := b.advance(p.cfg, s, cur, ok, p.since, p.now); t != nil {
				yield(t)
			} else {
				p.earliest(at)
			}
		}
	}
	b.commitTicks(ctx, plan, func(t *tick, r store.AdvanceResult) {
		switch {
		case errors.Is(r.Err, store.ErrCursorMoved):
			lost = append(lost, t.s)
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
	slices.SortFunc(lost, func(x, y *config.Schedule) int { return strings.Compare(x.Name, y.Name) })
	return lost, true
}

// committed takes note of the committed tick t, whose jobs had the results
// res: it logs what the tick did and moves the pass's view of the cursor.
func (b *Beat) committed(ctx context.Context, p *passRun, t *tick, res []queue.Enqueued) {
	if t.moved != nil {
		b.committedMove(ctx, t, p.since)
	}
	if len(t.due) > 0 {
		b.materialised(ctx, t, res)
	}
	c := t.cur
	c.At = t.to
	b.after[c.Schedule] = c
	p.earliest(t.next)
}

// Bounds of the rows (jobs, skips and the cursor) of the ticks that
// commitTicks hands to one AdvanceBatch call.
const (
	// minCommitRows: below it, a batch waits for more ticks even when the
	// writer is idle. A batch costs a transaction, whose commit writes the
	// pages that every batch shares (the cursors', the counts', the last
	// leaf of each index) once more.
	minCommitRows = 250
	// maxCommitRows: at it, the planning waits for the writer. It is the
	// store's transaction size, so that a batch is one transaction.
	maxCommitRows = store.AdvanceBatchRows
)

// batchErr is the failure of an AdvanceBatch call that returned res and
// err: err, else the first result's error that is not a cursor another
// beat moved (the store gives each Advance of a transaction that failed its
// error); nil when everything committed.
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

// commitTicks commits the ticks that plan yields, in their order, by
// AdvanceBatch calls on a goroutine of its own, and calls result with each
// tick and its result, in the same order, from the calling goroutine once
// plan has returned; a call that failed as a whole goes to failed instead,
// once per call, and its ticks to neither.
//
// The goroutine is for speed. Planning a tick (reading the cron fields,
// the zone's rules, building the jobs) is a good part of the work of a
// tick of many schedules and the writer's inserts most of the rest; one
// after the other they would take the sum, here they take about the
// longer. A batch
// is handed over as soon as the writer is free and it holds minCommitRows,
// so the writer starts after the first few schedules and then takes what
// the planning made meanwhile, up to maxCommitRows at a time.
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
	cur, rows := &batch{done: make(chan struct{})}, 0
	send := func() {
		work <- cur
		sent = append(sent, cur)
		cur, rows = &batch{done: make(chan struct{})}, 0
	}
	plan(func(t *tick) {
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
		if bt.err != nil {
			failed(bt.err)
			continue
		}
		for i, t := range bt.ticks {
			result(t, bt.res[i])
		}
	}
}

// byName returns the schedules of cfg in the order of their names, the
// order in which AdvanceBatch commits them: a batch of neighbours in it
// writes neighbouring pages of the indexes that begin with the name. It is
// kept for the config last asked about.
func (b *Beat) byName(cfg *config.Config) []*config.Schedule {
	if b.orderOf != cfg {
		b.order = slices.SortedFunc(slices.Values(cfg.Schedules), func(x, y *config.Schedule) int {
			return strings.Compare(x.Name, y.Name)
		})
		b.orderOf = cfg
	}
	return b.order
}

// cursorReader reads a queue's cursors in the order of the schedules'
// names while a pass plans the schedules in that order, a merge of the two:
// the planning starts at the first row instead of after the last, and the
// writer with it (see commitTicks).
type cursorReader struct {
	next func() (store.Cursor, bool)
	stop func()
	head store.Cursor // the next cursor, if more
	more bool
	err  error // the read's, once more is false
	seen func(store.Cursor)
}

// readCursors starts reading the cursors of q; seen is called with each
// cursor read, in order, before of returns it.
func readCursors(ctx context.Context, q *queue.Client, seen func(store.Cursor)) *cursorReader {
	r := &cursorReader{seen: seen}
	r.next, r.stop = iter.Pull(func(yield func(store.Cursor) bool) {
		r.err = q.CursorsByName(ctx, yield)
	})
	r.head, r.more = r.next()
	return r
}

// of returns the cursor of the schedule name, if it has one. Each name
// asked for must come after the one before in byte order.
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

// close reads the cursors not asked for, which seen still gets, ends the
// read and returns its error.
func (r *cursorReader) close() error {
	for r.more {
		r.seen(r.head)
		r.head, r.more = r.next()
	}
	r.stop()
	return r.err
}
