package schedule

import (
	"context"
	"log/slog"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/schedule/cron"
)

// maxSkipLines bounds the "run skipped" lines of one advance; the
// "instants skipped" line counts the rest.
const maxSkipLines = 100

// advance plans s's instants due by now: the tick that commits them, or
// none and s's next instant. A schedule without a cursor gets one at now;
// one that Apply added or re-timed has its cursor moved to the time of
// Apply (since holds these restart marks), so the change survives a
// restart. The tick commits that too, batched with other schedules'
// ticks, so many new schedules take few transactions.
func (b *Beat) advance(cfg *config.Config, s *config.Schedule, cur store.Cursor, exists bool, since map[string]time.Time, now time.Time) (*tick, time.Time) {
	from := cur.At // where the commit finds the cursor; zero: it creates one
	mark, marked := since[s.Name]
	move := true
	switch {
	case !exists:
		cur = store.Cursor{Schedule: s.Name, At: now.Truncate(time.Second)}
	case marked && mark.After(cur.At):
		cur.At = mark
	default:
		move = false
		if marked {
			b.forget(s.Name, mark)
			delete(since, s.Name)
		}
	}
	t, next := b.materialise(cfg, s, cur, now)
	if !move {
		return t, next
	}
	if t == nil {
		t = &tick{s: s, cur: cur, to: cur.At, next: next, adv: store.Advance{Schedule: s.Name, To: cur.At, Paused: cur.Paused}}
	}
	t.adv.From = from
	t.moved = &moved{from: from, created: !exists}
	if marked {
		t.moved.mark = &mark
	}
	return t, next
}

// moved is the creation or restart of a cursor that a tick commits.
type moved struct {
	from    time.Time  // the cursor as read; zero when created
	created bool       // there was no cursor
	mark    *time.Time // the restart mark honoured, if any
}

// committedMove logs t's cursor creation or restart and drops its mark.
// Past maxStartedLines in a pass, "schedule started" goes to debug.
func (b *Beat) committedMove(ctx context.Context, p *passRun, t *tick) {
	m := t.moved
	if m.created {
		p.started++
		if !t.next.IsZero() && (p.firstRun.IsZero() || t.next.Before(p.firstRun)) {
			p.firstRun = t.next
		}
		level := slog.LevelInfo
		if p.started > maxStartedLines {
			level = slog.LevelDebug
		}
		b.log.Log(ctx, level, "schedule started", logKeySchedule, t.s.Name, logKeyCursor, t.cur.At)
	} else {
		b.log.InfoContext(ctx, "schedule restarted", logKeySchedule, t.s.Name, logKeyFrom, m.from, logKeyCursor, t.cur.At)
	}
	if m.mark != nil {
		b.forget(t.s.Name, *m.mark)
		delete(p.since, t.s.Name)
	}
}

// forget drops the restart mark of name unless Apply has set a newer one.
func (b *Beat) forget(name string, since time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.since[name].Equal(since) {
		delete(b.since, name)
	}
}

// tick is one schedule's part in a pass: its Advance and what to log.
type tick struct {
	s         *config.Schedule
	i         int // s's position in the pass's schedules by name
	cur       store.Cursor
	due       []cron.Instant
	truncated bool
	runs      []time.Time
	skips     []cron.Skip
	to, next  time.Time
	adv       store.Advance
	moved     *moved // if the tick creates or restarts the cursor
}

// materialise plans s's instants in (cursor, now] and finds the next.
func (b *Beat) materialise(cfg *config.Config, s *config.Schedule, cur store.Cursor, now time.Time) (*tick, time.Time) {
	after := cur.At
	if now.After(after) {
		after = now
	}
	if cur.Paused {
		return nil, s.Expr().NextFrom(cur.At, after)
	}
	// In this order the second call hits cron.Expr's memo.
	due, truncated := s.Expr().Between(cur.At, now, maxInstantsPerAdvance)
	next := s.Expr().NextFrom(cur.At, after)
	if len(due) == 0 {
		return nil, next
	}
	// After a failed attempt lateness is measured from it (see Run).
	late := now
	if !b.lateFrom.IsZero() && b.lateFrom.Before(now) {
		late = b.lateFrom
	}
	runs, skips := cron.Plan(due, late, cfg.Scheduler.MisfireGrace, s.CatchUp, s.CatchUpLimit, false)
	to := due[len(due)-1].At
	adv := buildAdvance(cfg, s, cur.At, to, runs, skips, reason(store.SkipMisfire), now)
	if b.tracer != nil && len(adv.Jobs) > 0 {
		b.traceTick(s, runs, adv.Jobs, now)
	}
	return &tick{s: s, cur: cur, due: due, truncated: truncated, runs: runs, skips: skips, to: to, next: next, adv: adv}, next
}

// materialised logs what the committed tick t did.
func (b *Beat) materialised(ctx context.Context, t *tick, res []queue.Enqueued) {
	s, cur, due, truncated, runs, skips, to, next, adv := t.s, t.cur, t.due, t.truncated, t.runs, t.skips, t.to, t.next, t.adv
	overlaps := 0
	for _, r := range res {
		if r.Skipped {
			overlaps++
		}
	}
	b.report(s.Name, adv, res)
	if truncated {
		b.log.WarnContext(ctx, "missed instants passed over without a record",
			logKeySchedule, s.Name, logKeyFrom, cur.At, logKeyCursor, due[0].At)
	}
	lines := 0
	for _, sk := range adv.Skips {
		if lines++; lines > maxSkipLines {
			break
		}
		b.logSkip(ctx, s, sk.Item, sk.ScheduledAt, sk.Reason)
	}
	for i, r := range res {
		if r.Skipped {
			if lines++; lines > maxSkipLines {
				break
			}
			b.logSkip(ctx, s, adv.Jobs[i].Item, adv.Jobs[i].ScheduledAt, store.SkipOverlap)
		}
	}
	if len(skips) > 0 {
		b.log.InfoContext(ctx, "instants skipped",
			logKeySchedule, s.Name, logKeySkipped, len(skips), logKeyRuns, len(runs), logKeyCursor, to)
	}
	// Skip the allocations of a line the default level drops.
	if !b.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	b.log.DebugContext(ctx, "instants materialised",
		logKeySchedule, s.Name, logKeyRuns, len(runs), logKeyJobs, len(adv.Jobs), logKeyOverlaps, overlaps,
		logKeyCursor, to, logKeyNextAt, next)
}

// report passes what the committed adv did to the EventFunc.
func (b *Beat) report(name string, adv store.Advance, res []queue.Enqueued) {
	f := b.eventFunc
	if f == nil {
		return
	}
	n := 0
	for _, r := range res {
		if r.Inserted && !r.Skipped {
			n++
		}
	}
	f(Materialised{Schedule: name, Jobs: n})
	by := map[store.SkipReason]int{}
	for _, sk := range adv.Skips {
		by[sk.Reason]++
	}
	for _, r := range res {
		if r.Skipped {
			by[store.SkipOverlap]++
		}
	}
	for reason, n := range by {
		f(Skipped{Schedule: name, Reason: reason, Runs: n})
	}
}

// logSkip logs one skipped run, the instant in the schedule's zone.
func (b *Beat) logSkip(ctx context.Context, s *config.Schedule, item string, at time.Time, reason store.SkipReason) {
	b.log.InfoContext(ctx, "run skipped", logKeySchedule, s.Name, logKeyItem, item,
		logKeyInstant, at.In(s.Location).Format(time.RFC3339), logKeyReason, reason)
}

// notePause logs a schedule's pause or resume by another process when the
// beat first sees it, including a pause found at start.
func (b *Beat) notePause(ctx context.Context, i int, cur store.Cursor) {
	s := b.cursors.order[i]
	was, seen := b.cursors.pause(i, cur.Paused)
	switch {
	case cur.Paused && !was:
		b.log.InfoContext(ctx, "schedule paused", logKeySchedule, s.Name, logKeyPausedAt, cur.PausedAt)
	case !cur.Paused && was && seen:
		b.log.InfoContext(ctx, "schedule resumed", logKeySchedule, s.Name, logKeyCursor, cur.At)
	}
}
