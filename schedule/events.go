package schedule

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// Event is what a beat reports to BeatConfig.EventFunc: a Materialised, a
// Skipped or an AlarmRaised.
type Event interface{ beatEvent() }

// Materialised reports that a pass inserted Jobs jobs of Schedule.
type Materialised struct {
	Schedule string
	Jobs     int
}

// Skipped reports that a commit skipped Runs runs of Schedule for Reason.
type Skipped struct {
	Schedule string
	Reason   store.SkipReason
	Runs     int
}

// AlarmRaised reports an alarm of Kind that this beat, not another
// process, raised for Schedule.
type AlarmRaised struct {
	Schedule string
	Kind     store.AlarmKind
}

func (Materialised) beatEvent() {}
func (Skipped) beatEvent()      {}
func (AlarmRaised) beatEvent()  {}

// alarmPass judges the alarms after the pass at now, reports those
// raised, and returns when the next start_within or deadline falls due.
// Only Run's goroutine.
func (b *Beat) alarmPass(ctx context.Context, now time.Time) (time.Time, error) {
	res, err := b.alarms.Evaluate(ctx, b.Config(), now, &b.cursors)
	if f := b.eventFunc; f != nil {
		for _, a := range res.Raised {
			f(AlarmRaised{Schedule: a.Schedule, Kind: a.Kind})
		}
	}
	return res.Next, err
}

// JobFinished tells the beat that a job ended
// (queue.PoolConfig.FinishedFunc). It wakes the beat when a pass now can
// raise a dead alarm or a recovery (see alarm.Evaluator.Finished). Safe
// for concurrent use; never blocks.
func (b *Beat) JobFinished(f queue.Finished) {
	if b.alarms.Finished(b.Config(), f) {
		b.Wake()
	}
}

// Deadline returns schedule's deadline as of the last pass (see
// alarm.Evaluator.Deadline), for an alert rule "time() > deadline". Safe
// for concurrent use.
func (b *Beat) Deadline(schedule string) (time.Time, bool) {
	return b.alarms.Deadline(schedule)
}
