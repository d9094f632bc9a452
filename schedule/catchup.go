package schedule

import (
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// maxInstantsPerAdvance bounds the instants of one schedule that one Advance
// considers. After longer downtime of a frequent schedule the older
// instants are passed over without a skip record (and a warning is logged):
// recording millions of skips would help nobody.
const maxInstantsPerAdvance = 10000

// skipped is an instant that does not run, and why.
type skipped struct {
	at     time.Time
	reason store.SkipReason
}

// noGrace, as planInstants' grace, makes every due instant missed: none
// counts as on time, so the catch-up policy alone decides.
const noGrace = -1

// planInstants decides which of a schedule's due instants, oldest first, run.
//
// Repeated wall times of a fall-back are skipped (store.SkipDST). An instant
// at most grace before now is on time and runs. Later ones are missed, and
// policy decides: CatchUpAll runs the newest limit of them, CatchUpLatest
// the newest one unless an instant on time runs anyway, CatchUpNone none.
// Missed instants that do not run are skipped with the reason missReason
// gives for them. With skipAll every instant is skipped so, on time or not.
func planInstants(due []instant, now time.Time, grace time.Duration, policy CatchUp, limit int, missReason func(time.Time) store.SkipReason, skipAll bool) (runs []time.Time, skips []skipped) {
	var late []time.Time
	onTime := 0
	for _, in := range due {
		switch {
		case in.dst:
			skips = append(skips, skipped{at: in.at, reason: store.SkipDST})
		case skipAll:
			skips = append(skips, skipped{at: in.at, reason: missReason(in.at)})
		case grace >= 0 && now.Sub(in.at) <= grace:
			runs = append(runs, in.at)
			onTime++
		default:
			late = append(late, in.at)
		}
	}
	keep := 0
	switch policy {
	case CatchUpAll:
		keep = min(limit, len(late))
	case CatchUpLatest:
		if onTime == 0 && len(late) > 0 {
			keep = 1
		}
	}
	for _, at := range late[:len(late)-keep] {
		skips = append(skips, skipped{at: at, reason: missReason(at)})
	}
	// Late instants precede the on-time ones: keep the runs in order.
	runs = append(append([]time.Time(nil), late[len(late)-keep:]...), runs...)
	return runs, skips
}

// reason returns a constant skip reason, for planInstants.
func reason(r store.SkipReason) func(time.Time) store.SkipReason {
	return func(time.Time) store.SkipReason { return r }
}

// pauseReason is the skip reason of an instant not run when a schedule
// paused at pausedAt resumes: store.SkipPaused for an instant after the
// pause, store.SkipMisfire for one the beat had missed before it (the
// daemon was down). A zero pausedAt counts every instant as paused.
func pauseReason(pausedAt time.Time) func(time.Time) store.SkipReason {
	return func(at time.Time) store.SkipReason {
		if pausedAt.IsZero() || at.After(pausedAt) {
			return store.SkipPaused
		}
		return store.SkipMisfire
	}
}

// buildAdvance makes the Advance that moves a schedule's cursor from from to
// to, materialising runs for every item and recording skips for the whole
// schedule (Item "").
func buildAdvance(cfg *Config, s *Schedule, from, to time.Time, runs []time.Time, skips []skipped, now time.Time) store.Advance {
	adv := store.Advance{Schedule: s.Name, From: from, To: to}
	task := cfg.Tasks[s.Task]
	if len(runs) > 0 {
		adv.Jobs = make([]queue.NewJob, 0, len(runs)*len(s.items))
	}
	for _, at := range runs {
		at = at.UTC()
		for _, it := range s.items {
			j := runJob(s, task, it.ID, DedupKey(s.Name, it.ID, at), it.Payload, at)
			j.SkipIfActive = s.Overlap == OverlapSkip
			adv.Jobs = append(adv.Jobs, j)
		}
	}
	for _, sk := range skips {
		adv.Skips = append(adv.Skips, store.Skip{
			Schedule:    s.Name,
			ScheduledAt: sk.at.UTC(),
			Reason:      sk.reason,
			RecordedAt:  now,
		})
	}
	return adv
}

// nextEvent returns the first instant of s's series after after: for
// "@every" counted from anchor, the schedule's cursor.
func (s *Spec) nextEvent(anchor, after time.Time) time.Time {
	if s.every > 0 {
		if after.Before(anchor) {
			return anchor.Add(s.every)
		}
		k := after.Sub(anchor)/s.every + 1
		return anchor.Add(k * s.every)
	}
	at, _ := s.step(after)
	return at
}
