package alarm

import (
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// Finished reports whether a job's end (queue.PoolConfig.FinishedFunc)
// calls for an evaluation now, because it can raise something: a job of
// a watched schedule of cfg went dead, or succeeded while its schedule
// had open alarms; a job went dead that a watched schedule with after
// waits for; or a notification ended while a recovery waited for
// one. Safe for concurrent use; never blocks.
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
	s, _ := scheduleOf(cfg, f.Schedule)
	if dead && s != nil && followedByWatched(cfg, s.Name) {
		return true // it may skip a schedule after it
	}
	return s != nil && s.Watched() && (dead || e.alarmed[f.Schedule])
}

// Deadline returns schedule's deadline as of the last evaluation: that of
// its oldest unrecovered missed instant, else of its oldest instant not
// yet judged. It is false for a schedule without a deadline or before the
// first evaluation. Safe for concurrent use.
func (e *Evaluator) Deadline(schedule string) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	at, ok := e.deadlines[schedule]
	return at, ok
}

func (e *Evaluator) setDeadlines(d map[string]time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.deadlines = d
}

func (e *Evaluator) setAlarmed(a map[string]bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.alarmed = a
}

func (e *Evaluator) markAlarmed(schedule string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.alarmed == nil {
		e.alarmed = map[string]bool{}
	}
	e.alarmed[schedule] = true
}

func (e *Evaluator) setRecoveryWaits(waits bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.recoveryWaits = waits
}
