package queue

import (
	"errors"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Finished is one attempt's end as PoolConfig.FinishedFunc sees it.
type Finished struct {
	Type         string
	Schedule     string    // "" for a job of no schedule
	Notification bool      // the job carries an alarm (Job.AlarmKey)
	Outcome      Outcome   // done, retry, dead, released or cancelled
	TimedOut     bool      // the type's timeout ended it (outcome retry or dead)
	Due          time.Time // when the job became ready: its run_at when claimed
	Started      time.Time
	Finished     time.Time
}

// report passes committed results whose fence held, and the reclaimed lease
// count, to the config's funcs.
func (p *Pool) report(results []store.Result, fenced []bool, reclaimed int) {
	if f := p.cfg.FinishedFunc; f != nil {
		for i, r := range results {
			if !fenced[i] {
				continue
			}
			f(Finished{Type: r.Job.Type, Schedule: r.Job.Schedule, Outcome: r.Outcome, TimedOut: r.TimedOut,
				Notification: r.Job.AlarmKey != "",
				Due:          r.Job.RunAt, Started: r.Started, Finished: r.Finished})
		}
	}
	if reclaimed > 0 && p.cfg.ReclaimedFunc != nil {
		p.cfg.ReclaimedFunc(reclaimed)
	}
}

func isTimeout(err error) bool {
	_, ok := errors.AsType[*TimeoutError](err)
	return ok
}
