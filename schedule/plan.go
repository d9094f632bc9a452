package schedule

import (
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/schedule/cron"
)

// maxInstantsPerAdvance bounds the instants one Advance considers. After
// long downtime older instants are passed over with a warning and no skip
// record: millions of skips would help nobody.
const maxInstantsPerAdvance = 10000

func reason(r store.SkipReason) func(time.Time) store.SkipReason {
	return func(time.Time) store.SkipReason { return r }
}

// pauseReason is the skip reason at resume: store.SkipPaused after
// pausedAt, or always when it is zero, else store.SkipMisfire.
func pauseReason(pausedAt time.Time) func(time.Time) store.SkipReason {
	return func(at time.Time) store.SkipReason {
		if pausedAt.IsZero() || at.After(pausedAt) {
			return store.SkipPaused
		}
		return store.SkipMisfire
	}
}

// buildAdvance makes the Advance that moves s's cursor from from to to,
// with runs for every item and skips for the whole schedule (Item ""):
// store.SkipDST for a fall-back repeat, else missReason's.
func buildAdvance(cfg *config.Config, s *config.Schedule, from, to time.Time, runs []time.Time, skips []cron.Skip, missReason func(time.Time) store.SkipReason, now time.Time) store.Advance {
	adv := store.Advance{Schedule: s.Name, From: from, To: to}
	task := cfg.Tasks[s.Task]
	if len(runs) > 0 {
		adv.Jobs = make([]queue.NewJob, 0, len(runs)*len(s.Items()))
	}
	for _, at := range runs {
		at = at.UTC()
		first := len(adv.Jobs)
		for _, it := range s.Items() {
			j := runJob(s, task, it.ID, DedupKey(s.Name, it.ID, at), it.Payload, at)
			j.SkipIfActive = s.Overlap == config.OverlapSkip
			adv.Jobs = append(adv.Jobs, j)
		}
		if specs := fanIns(cfg, s, at, ""); specs != nil {
			adv.FanIns = append(adv.FanIns, store.AdvanceFanIn{Specs: specs, First: first, N: len(adv.Jobs) - first})
		}
	}
	for _, sk := range skips {
		r := store.SkipDST
		if !sk.DST {
			r = missReason(sk.At)
		}
		adv.Skips = append(adv.Skips, store.Skip{
			Schedule:    s.Name,
			ScheduledAt: sk.At.UTC(),
			Reason:      r,
			RecordedAt:  now,
		})
	}
	return adv
}
