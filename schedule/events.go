package schedule

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/alarm"
)

// Event is what a beat reports of its work to BeatConfig.EventFunc: a
// Materialised, a Skipped or an AlarmRaised.
type Event interface{ beatEvent() }

// Materialised reports that a pass committed the due instants of Schedule,
// inserting Jobs jobs (one per fan-out item of each run).
type Materialised struct {
	Schedule string
	Jobs     int
}

// Skipped reports that a commit recorded Runs runs of Schedule as skipped
// for Reason (an item's run counts once).
type Skipped struct {
	Schedule string
	Reason   store.SkipReason
	Runs     int
}

// AlarmRaised reports an alarm of Kind that this beat raised for Schedule.
// An alarm raised by another process is not reported.
type AlarmRaised struct {
	Schedule string
	Kind     store.AlarmKind
}

func (Materialised) beatEvent() {}
func (Skipped) beatEvent()      {}
func (AlarmRaised) beatEvent()  {}

// alarmPass judges the alarms after the pass at now (see alarm.Evaluator),
// reports the alarms it raised, and returns the earliest time a
// start_within or deadline falls due (zero if none). Only Run's goroutine.
func (b *Beat) alarmPass(ctx context.Context, now time.Time) (time.Time, error) {
	res, err := b.alarms.Evaluate(ctx, b.Config(), now, alarm.Cursors{Before: b.before, After: b.after})
	if f := b.eventFunc; f != nil {
		for _, a := range res.Raised {
			f(AlarmRaised{Schedule: a.Schedule, Kind: a.Kind})
		}
	}
	return res.Next, err
}

// JobFinished tells the beat that a job ended, as a pool reports it
// (queue.PoolConfig.FinishedFunc), so that a dead alarm or a recovery is
// judged now rather than at the beat's next pass, up to MaxSleep later. It
// wakes the beat only when that pass can raise something (see
// alarm.Evaluator.Finished): for a job of a watched schedule, when it went
// dead, or succeeded while the schedule had open alarms at the last pass;
// for a notification, when it ended while a recovery waited for one. Safe
// for concurrent use; never blocks.
func (b *Beat) JobFinished(f queue.Finished) {
	if b.alarms.Finished(b.Config(), f) {
		b.Wake()
	}
}

// Deadline returns the deadline of schedule as of the beat's last pass:
// the deadline of its oldest instant that missed it and has not recovered,
// else of its oldest instant not yet judged (the next instant, unless one
// waits for its deadline). The second result is false for a schedule
// without a deadline or before the first pass. A metric of it makes an
// alert rule "time() > deadline". Safe for concurrent use.
func (b *Beat) Deadline(schedule string) (time.Time, bool) {
	return b.alarms.Deadline(schedule)
}
