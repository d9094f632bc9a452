package alarm

import (
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// Finished reports whether the end of a job, as a pool reports it
// (queue.PoolConfig.FinishedFunc), calls for an evaluation now rather than
// at the beat's next pass, because that evaluation can raise something: a
// job of a watched schedule of cfg, the config in use, that went dead, or
// that succeeded while its schedule had open alarms at the last
// evaluation; or a notification that ended, done or dead, while a
// recovery waited for one. A recovery waits for the notifications of the
// alarms it closes, so that a receiver such as a pager gets an alarm
// before its recovery. Safe for concurrent use; never blocks.
func (e *Evaluator) Finished(cfg *config.Config, f queue.Finished) bool {
	dead := f.Outcome == queue.OutcomeDead
	if !dead && f.Outcome != queue.OutcomeDone {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if f.Notification {
		return e.recoveryWaits
	}
	if f.Schedule == "" {
		return false
	}
	s, _ := cfg.Schedule(f.Schedule)
	return s != nil && s.Watched() && (dead || e.alarmed[f.Schedule])
}

// Deadline returns the deadline of schedule as of the last evaluation: the
// deadline of its oldest instant that missed it and has not recovered,
// else of its oldest instant not yet judged (the next instant, unless one
// waits for its deadline). The second result is false for a schedule
// without a deadline or before the first evaluation. Safe for concurrent
// use.
func (e *Evaluator) Deadline(schedule string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.deadlines[schedule]
	return at, ok
}

// setDeadlines replaces the deadlines Deadline reports.
func (e *Evaluator) setDeadlines(d map[string]time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.deadlines = d
}

// setAlarmed replaces the schedules Finished takes to have open alarms.
func (e *Evaluator) setAlarmed(a map[string]bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.alarmed = a
}

// markAlarmed adds schedule to those Finished takes to have open alarms.
func (e *Evaluator) markAlarmed(schedule string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.alarmed == nil {
		e.alarmed = map[string]bool{}
	}
	e.alarmed[schedule] = true
}

// setRecoveryWaits records whether a recovery waits for a notification.
func (e *Evaluator) setRecoveryWaits(waits bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.recoveryWaits = waits
}
