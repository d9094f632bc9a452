package alarm

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// proposed is an alarm an evaluation proposes, with its payload's needs.
type proposed struct {
	s     *config.Schedule // nil for a schedule no longer configured
	a     store.NewAlarm
	limit time.Time // the deadline of the payload
	skips int
	// succeeded is when a recovered alarm's job succeeded.
	succeeded time.Time
}

// judgeInstants judges, item by item, the instants of s in (mark, cursor]
// whose limit d (start_within or deadline) has passed, and returns the
// new mark and the alarms. Only instants with jobs are judged: a skipped
// instant has no run to be late. A cancelled job raises nothing. With no
// limit the mark follows the cursor, so a limit added later judges from
// then on.
func (e *Evaluator) judgeInstants(ctx context.Context, cfg *config.Config, s *config.Schedule, kind store.AlarmKind, d time.Duration, mark, cursor, now time.Time) (time.Time, []proposed, error) {
	if d <= 0 {
		return later(mark, cursor), nil, nil
	}
	through := now.Add(-d)
	if cursor.Before(through) {
		through = cursor
	}
	if !through.After(mark) {
		return mark, nil, nil
	}
	limit := max(alarmRows, 2*len(s.Items()))
	jobs, err := e.q.InstantJobs(ctx, s.Name, mark, through, limit)
	if err != nil {
		return mark, nil, err
	}
	if len(jobs) == limit {
		// Judge whole instants: the last one read may have more items.
		last := jobs[len(jobs)-1].ScheduledAt
		cut := len(jobs)
		for cut > 0 && jobs[cut-1].ScheduledAt.Equal(last) {
			cut--
		}
		if cut > 0 {
			jobs = jobs[:cut]
		}
	}
	// The mark moves to the newest instant judged, not to through, so an
	// evaluation that judges nothing writes nothing.
	if len(jobs) == 0 {
		return mark, nil, nil
	}
	through = jobs[len(jobs)-1].ScheduledAt
	var out []proposed
	for _, j := range jobs {
		due := j.ScheduledAt.Add(d)
		var bad bool
		switch {
		case j.State == queue.StateCancelled:
		case kind == store.AlarmLate:
			bad = j.FirstStartedAt.IsZero() || j.FirstStartedAt.After(due)
		default:
			bad = j.State != queue.StateDone || j.FinishedAt.After(due)
		}
		if bad {
			out = append(out, proposed{s: s, limit: due, a: store.NewAlarm{Schedule: s.Name, Item: j.Item,
				ScheduledAt: j.ScheduledAt, Kind: kind, JobID: j.ID, Error: alarmError(cfg, j.Job), At: due}})
		}
	}
	return through, out, nil
}

// alarmError is j's error masked by its task's current redaction: the job
// stored it masked, maybe under a config that redacted less.
func alarmError(cfg *config.Config, j *queue.Job) string {
	return cfg.Redactor(j.Type).Attempt(j.Payload, j.LastError)
}

// judgeMisfires raises one misfire alarm per beat step that skipped
// instants of s in (mark, cursor], keyed by its newest skip. A step's
// skips share their recorded time and commit with the cursor's move, so
// every evaluation sees the same groups.
func (e *Evaluator) judgeMisfires(ctx context.Context, s *config.Schedule, mark, cursor time.Time) (time.Time, []proposed, error) {
	if !cursor.After(mark) {
		return mark, nil, nil
	}
	skips, err := e.q.SkipsBetween(ctx, s.Name, store.SkipMisfire, mark, cursor, alarmRows)
	if err != nil {
		return mark, nil, err
	}
	through := cursor
	if len(skips) == alarmRows {
		last := skips[len(skips)-1].RecordedAt
		cut := len(skips)
		for cut > 0 && skips[cut-1].RecordedAt.Equal(last) {
			cut--
		}
		if cut > 0 {
			skips = skips[:cut]
		}
		through = skips[len(skips)-1].ScheduledAt
	}
	var out []proposed
	for i := 0; i < len(skips); {
		k := i
		for k < len(skips) && skips[k].RecordedAt.Equal(skips[i].RecordedAt) && skips[k].Item == skips[i].Item {
			k++
		}
		newest := skips[k-1]
		p := proposed{s: s, skips: k - i, a: store.NewAlarm{Schedule: s.Name, Item: newest.Item,
			ScheduledAt: newest.ScheduledAt, Kind: store.AlarmMisfire, At: newest.RecordedAt}}
		if s.Deadline > 0 {
			p.limit = newest.ScheduledAt.Add(s.Deadline)
		}
		out = append(out, p)
		i = k
	}
	return through, out, nil
}

// judgeDead raises, once, a dead alarm for each job of s in dead that went
// dead after mark less deadLookback.
func (e *Evaluator) judgeDead(cfg *config.Config, s *config.Schedule, dead []*queue.Job, mark time.Time) []proposed {
	var out []proposed
	for _, j := range dead {
		if j.Schedule != s.Name || !j.FinishedAt.After(mark.Add(-deadLookback)) {
			continue
		}
		a := store.NewAlarm{Schedule: s.Name, Item: j.Item, ScheduledAt: j.ScheduledAt, Kind: store.AlarmDead,
			JobID: j.ID, Error: alarmError(cfg, j), At: j.FinishedAt}
		a.Key = alarmKey(a)
		if _, ok := e.seen[a.Key]; ok {
			continue
		}
		p := proposed{s: s, a: a}
		if s.Deadline > 0 && !j.ScheduledAt.IsZero() {
			p.limit = j.ScheduledAt.Add(s.Deadline)
		}
		out = append(out, p)
	}
	return out
}

// judgeRecoveries raises a recovered alarm, closing them, for each
// instant or manual run with open alarms whose job is done. It also
// returns each schedule's oldest deadline still missed, and whether a
// recovery waits.
//
// A recovery waits while a notification of an alarm it closes has not
// ended: a pager must get the alarm before its recovery, or the alarm
// would stay open there. That notification's end calls for an
// evaluation (see Finished).
func (e *Evaluator) judgeRecoveries(ctx context.Context, cfg *config.Config) ([]proposed, map[string]time.Time, bool, error) {
	open, err := e.q.OpenAlarms(ctx, store.MaxAlarmRows)
	if err != nil {
		return nil, nil, false, err
	}
	missed := map[string]time.Time{}
	alarmed := map[string]bool{}
	for _, o := range open {
		alarmed[o.Schedule] = true
	}
	e.setAlarmed(alarmed)
	var out []proposed
	byKey := map[string]int{}      // recovered key -> index in out
	notifying := map[string]bool{} // recovered keys that wait for a notification
	for _, o := range open {
		s, _ := scheduleOf(cfg, o.Schedule)
		if o.JobState != queue.StateDone && o.JobState != "" {
			if o.Kind == store.AlarmMissed && s != nil && s.Deadline > 0 {
				at := o.ScheduledAt.Add(s.Deadline)
				if cur, ok := missed[o.Schedule]; !ok || at.Before(cur) {
					missed[o.Schedule] = at
				}
			}
			continue
		}
		a := store.NewAlarm{Schedule: o.Schedule, Item: o.Item, ScheduledAt: o.ScheduledAt, Kind: store.AlarmRecovered, JobID: o.JobID}
		a.Key = alarmKey(a)
		if o.Notifying {
			notifying[a.Key] = true
		}
		if i, ok := byKey[a.Key]; ok {
			out[i].a.Resolves = append(out[i].a.Resolves, o.ID)
			continue
		}
		a.Resolves = []int64{o.ID}
		p := proposed{s: s, a: a, succeeded: o.JobFinishedAt}
		if s != nil && s.Deadline > 0 && !o.ScheduledAt.IsZero() {
			p.limit = o.ScheduledAt.Add(s.Deadline)
		}
		byKey[a.Key] = len(out)
		out = append(out, p)
	}
	if len(notifying) > 0 {
		ready := out[:0]
		for _, p := range out {
			if !notifying[p.a.Key] {
				ready = append(ready, p)
			}
		}
		out = ready
	}
	return out, missed, len(notifying) > 0, nil
}
