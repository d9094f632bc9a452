package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// Log attribute keys of alarms.
const (
	logKeyKind  = "kind"
	logKeyJobID = "job_id"
	logKeyError = "error"
)

// deadLookback is how far before its dead mark the evaluation looks for
// dead jobs again. A job's finished_at is taken when its result is
// computed, before its transaction waits for the write lock and commits, so
// a job may become visible as dead with a finished_at a little before a
// mark already passed. The keys of the alarms raised within the lookback
// are remembered, so that a pass proposes each once.
const deadLookback = 5 * time.Minute

// AlarmPayload is the JSON payload of an alarm's notification jobs, and the
// detail stored with the alarm. Times are RFC 3339 in the schedule's zone;
// empty when there is none.
type AlarmPayload struct {
	Schedule string `json:"schedule"`
	Item     string `json:"item"`
	// Instant is the instant the alarm is about; empty for a manual run's
	// job. For a misfire, the newest instant skipped.
	Instant string `json:"instant"`
	Kind    string `json:"kind"`
	// Deadline is the limit the alarm is about: the instant plus
	// start_within for a late alarm, plus deadline otherwise (empty when
	// the schedule has none).
	Deadline string `json:"deadline"`
	// LastSuccess is when the schedule's newest successful instant
	// finished, as the alarm was raised.
	LastSuccess string `json:"last_success"`
	JobID       int64  `json:"job_id"`
	LastError   string `json:"last_error"`
	// Skipped counts the instants a misfire skipped (one alarm per beat
	// step that skipped any); 0 for the other kinds. Always present, so
	// that a notify command's template may read it whatever the kind.
	Skipped int `json:"skipped"`
}

// proposed is an alarm the evaluation proposes, with what its payload
// needs once the batch is known.
type proposed struct {
	s     *Schedule // nil for a schedule no longer configured
	a     store.NewAlarm
	limit time.Time // the deadline of the payload
	skips int
}

// evalAlarms judges, from the database, what happened since each watched
// schedule's alarm marks: instants past their start_within or deadline,
// misfire skips, dead jobs; and which open alarms recovered. It raises the
// new alarms with their notifications and moves the marks in one
// transaction, logs each alarm this process raised, and returns the
// earliest time a start_within or deadline falls due (zero if none).
// Only Run's goroutine calls it.
func (b *Beat) evalAlarms(ctx context.Context, cfg *Config, now time.Time) (time.Time, error) {
	var watched []*Schedule
	for _, s := range cfg.Schedules {
		if s.Watched() {
			watched = append(watched, s)
		}
	}
	if len(watched) == 0 {
		b.setDeadlines(nil)
		return time.Time{}, nil
	}
	cursors := b.after
	if b.marks == nil {
		marks, err := b.q.AlarmMarks(ctx)
		if err != nil {
			return time.Time{}, err
		}
		b.marks = marks
	}
	marks := b.marks
	// The dead jobs of every schedule since the oldest dead mark: one
	// range of an index of dead jobs per pass.
	deadFrom := now
	for _, s := range watched {
		if m, ok := marks[s.Name]; ok && m.Dead.Before(deadFrom) {
			deadFrom = m.Dead
		}
	}
	dead, err := b.q.DeadJobs(ctx, later(deadFrom.Add(-deadLookback), b.deadAfter), alarmRows)
	if err != nil {
		return time.Time{}, err
	}
	deadThrough := now
	if len(dead) == alarmRows {
		// A flood of dead jobs: the next pass reads on from the last one
		// read, not from the lookback again (jobs that went dead in the
		// same millisecond as it and were not read are passed over).
		deadThrough = dead[len(dead)-1].FinishedAt
		b.deadAfter = deadThrough
	}
	var next time.Time
	wakeAt := func(at time.Time) {
		if at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	var props []proposed
	var newMarks []store.AlarmMark
	nextDeadline := map[string]time.Time{}
	for _, s := range watched {
		cur, ok := cursors[s.Name]
		if !ok {
			continue
		}
		m, known := marks[s.Name]
		if !known {
			// A schedule watched for the first time is judged from its
			// cursor on: as the pass found it, before it materialised the
			// instants due, which may be the ones a downtime passed (a
			// daemon stopped before it judged anything).
			from := cur.At
			if c, ok := b.before[s.Name]; ok {
				from = c.At
			}
			m = store.AlarmMark{Schedule: s.Name, Late: from, Missed: from, Misfire: from, Dead: now}
		}
		nm := m
		var ps []proposed
		if nm.Late, ps, err = b.judgeInstants(ctx, cfg, s, store.AlarmLate, s.StartWithin, m.Late, cur.At, now); err != nil {
			return time.Time{}, err
		}
		props = append(props, ps...)
		if nm.Missed, ps, err = b.judgeInstants(ctx, cfg, s, store.AlarmMissed, s.Deadline, m.Missed, cur.At, now); err != nil {
			return time.Time{}, err
		}
		props = append(props, ps...)
		if nm.Misfire, ps, err = b.judgeMisfires(ctx, s, m.Misfire, cur.At); err != nil {
			return time.Time{}, err
		}
		props = append(props, ps...)
		props = append(props, b.judgeDead(cfg, s, dead, m.Dead)...)
		nm.Dead = later(m.Dead, deadThrough)
		if known && nm.Dead.Sub(m.Dead) < deadLookback {
			// The dead look goes back deadLookback from its mark anyway:
			// the mark is written when it moved that far, not every pass.
			nm.Dead = m.Dead
		}
		if !known || nm != m {
			newMarks = append(newMarks, nm)
		}
		// The next limit due: of the first instant whose limit is still
		// ahead (an instant between the mark and it had no job to judge).
		if s.StartWithin > 0 {
			wakeAt(s.spec.nextEvent(cur.At, later(nm.Late, now.Add(-s.StartWithin))).Add(s.StartWithin))
		}
		if s.Deadline > 0 {
			nextDeadline[s.Name] = s.spec.nextEvent(cur.At, later(nm.Missed, now.Add(-s.Deadline))).Add(s.Deadline)
			wakeAt(nextDeadline[s.Name])
		}
	}
	recovered, missed, err := b.judgeRecoveries(ctx, cfg)
	if err != nil {
		return time.Time{}, err
	}
	props = append(props, recovered...)
	deadlines := map[string]time.Time{}
	for name, at := range nextDeadline {
		deadlines[name] = at
		if m, ok := missed[name]; ok {
			deadlines[name] = m
		}
	}
	defer func() { b.setDeadlines(deadlines) }()
	if len(props) == 0 && len(newMarks) == 0 {
		return next, nil
	}
	batch, err := b.alarmBatch(ctx, props, newMarks)
	if err != nil {
		return time.Time{}, err
	}
	raised, err := b.q.RaiseAlarms(ctx, batch)
	if err != nil {
		b.marks = nil // read them again
		return time.Time{}, err
	}
	for _, m := range newMarks {
		b.marks[m.Schedule] = m
	}
	for _, a := range batch.Alarms {
		if a.Kind == store.AlarmDead {
			b.deadSeen[a.Key] = now // raised now, or before by another beat
		}
		if store.OpensAlarm(a.Kind) {
			// Open now: the success that recovers it must wake the beat
			// (see JobEnded), though the pass read the open alarms before.
			b.markAlarmed(a.Schedule)
		}
	}
	for _, a := range raised {
		instant := ""
		if !a.ScheduledAt.IsZero() {
			loc := time.UTC
			if s, ok := cfg.Schedule(a.Schedule); ok {
				loc = s.Location
			}
			instant = a.ScheduledAt.In(loc).Format(time.RFC3339)
		}
		if a.Kind == store.AlarmMissed {
			// Now the oldest unsatisfied instant, unless an older one is.
			if s, ok := cfg.Schedule(a.Schedule); ok && s.Deadline > 0 {
				if at, ok := deadlines[a.Schedule]; ok && a.ScheduledAt.Add(s.Deadline).Before(at) {
					deadlines[a.Schedule] = a.ScheduledAt.Add(s.Deadline)
				}
			}
		}
		b.log.ErrorContext(ctx, "alarm raised", logKeySchedule, a.Schedule, logKeyItem, a.Item, logKeyInstant, instant,
			logKeyKind, string(a.Kind), logKeyJobID, a.JobID, logKeyError, a.Error)
		if b.alarmFunc != nil {
			b.alarmFunc(a.Schedule, string(a.Kind))
		}
	}
	for key, at := range b.deadSeen {
		if now.Sub(at) > 2*deadLookback {
			delete(b.deadSeen, key)
		}
	}
	return next, nil
}

// judgeInstants judges the instants of s in (mark, cursor] whose limit d
// (start_within for late, deadline for missed) has passed by now, item by
// item, and returns the new mark (the newest instant judged) and the
// alarms. Only instants with jobs
// are judged: an instant skipped, or passed over by a restart, has no run
// to be late. A cancelled job raises nothing. With no limit the mark
// follows the cursor, so that a limit added later judges from then on.
func (b *Beat) judgeInstants(ctx context.Context, cfg *Config, s *Schedule, kind store.AlarmKind, d time.Duration, mark, cursor, now time.Time) (time.Time, []proposed, error) {
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
	limit := max(alarmRows, 2*len(s.items))
	jobs, err := b.q.InstantJobs(ctx, s.Name, mark, through, limit)
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
	// The mark moves to the newest instant judged, not to through: a pass
	// that judges nothing writes nothing, and reads an empty range of the
	// index again next time.
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
				ScheduledAt: j.ScheduledAt, Kind: kind, JobID: j.ID, Error: alarmError(cfg, j.Job)}})
		}
	}
	return through, out, nil
}

// alarmError is the error of j that an alarm about it carries, masked by
// its task's redaction as the daemon's config has it now: the job stored
// its error masked, but maybe under a config that redacted less.
func alarmError(cfg *Config, j *queue.Job) string {
	return cfg.Redactor(j.Type).Attempt(j.Payload, j.LastError)
}

// alarmRows bounds the rows one judgement of a schedule reads in a pass;
// the rest waits for the next pass.
const alarmRows = 1000

// judgeMisfires raises one misfire alarm per beat step (one Advance, whose
// skips share their recorded time) that skipped instants of s in (mark,
// cursor], keyed by the newest instant it skipped: the skips of a step
// commit with the cursor's move, so every evaluation sees the same groups.
func (b *Beat) judgeMisfires(ctx context.Context, s *Schedule, mark, cursor time.Time) (time.Time, []proposed, error) {
	if !cursor.After(mark) {
		return mark, nil, nil
	}
	skips, err := b.q.SkipsBetween(ctx, s.Name, store.SkipMisfire, mark, cursor, alarmRows)
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
			ScheduledAt: newest.ScheduledAt, Kind: store.AlarmMisfire}}
		if s.Deadline > 0 {
			p.limit = newest.ScheduledAt.Add(s.Deadline)
		}
		out = append(out, p)
		i = k
	}
	return through, out, nil
}

// judgeDead raises a dead alarm for each job of s that went dead after
// mark (less deadLookback; see there), once, from the dead jobs of every
// schedule read once per pass.
func (b *Beat) judgeDead(cfg *Config, s *Schedule, dead []*queue.Job, mark time.Time) []proposed {
	var out []proposed
	for _, j := range dead {
		if j.Schedule != s.Name || !j.FinishedAt.After(mark.Add(-deadLookback)) {
			continue
		}
		a := store.NewAlarm{Schedule: s.Name, Item: j.Item, ScheduledAt: j.ScheduledAt, Kind: store.AlarmDead,
			JobID: j.ID, Error: alarmError(cfg, j)}
		a.Key = alarmKey(a)
		if _, ok := b.deadSeen[a.Key]; ok {
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

// judgeRecoveries raises a recovered alarm for each instant (or manual run)
// with open alarms whose job is done, closing them. It also returns, per
// schedule, the deadline of its oldest instant that missed it and is still
// unsatisfied.
//
// A recovery waits while a notification job of an alarm it closes has not
// ended (it is pending, retrying or running): a receiver such as a pager
// must get the alarm before its recovery, or the recovery would find
// nothing to resolve and the alarm would stay open there. The end of that
// notification wakes the beat (NotificationEnded).
func (b *Beat) judgeRecoveries(ctx context.Context, cfg *Config) ([]proposed, map[string]time.Time, error) {
	open, err := b.q.OpenAlarms(ctx, store.MaxAlarmRows)
	if err != nil {
		return nil, nil, err
	}
	missed := map[string]time.Time{}
	alarmed := map[string]bool{}
	for _, o := range open {
		alarmed[o.Schedule] = true
	}
	b.setAlarmed(alarmed)
	var out []proposed
	byKey := map[string]int{}      // recovered key -> index in out
	notifying := map[string]bool{} // recovered keys that wait for a notification
	for _, o := range open {
		s, _ := cfg.Schedule(o.Schedule)
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
		p := proposed{s: s, a: a}
		if s != nil && s.Deadline > 0 && !o.ScheduledAt.IsZero() {
			p.limit = o.ScheduledAt.Add(s.Deadline)
		}
		byKey[a.Key] = len(out)
		out = append(out, p)
	}
	b.setHeld(len(notifying) > 0)
	if len(notifying) > 0 {
		ready := out[:0]
		for _, p := range out {
			if !notifying[p.a.Key] {
				ready = append(ready, p)
			}
		}
		out = ready
	}
	return out, missed, nil
}

// alarmBatch fills the payloads and notification jobs of props.
func (b *Beat) alarmBatch(ctx context.Context, props []proposed, marks []store.AlarmMark) (store.AlarmBatch, error) {
	batch := store.AlarmBatch{Marks: marks}
	cfg := b.Config()
	lastSuccess := map[string]time.Time{}
	for _, p := range props {
		name := p.a.Schedule
		if _, ok := lastSuccess[name]; !ok {
			at, err := b.q.LastSuccess(ctx, name)
			if err != nil {
				return batch, err
			}
			lastSuccess[name] = at
		}
		loc := time.UTC
		if p.s != nil {
			loc = p.s.Location
		}
		a := p.a
		a.Key = alarmKey(a)
		payload := AlarmPayload{Schedule: name, Item: a.Item, Instant: inZone(a.ScheduledAt, loc), Kind: string(a.Kind),
			Deadline: inZone(p.limit, loc), LastSuccess: inZone(lastSuccess[name], loc), JobID: a.JobID,
			LastError: a.Error, Skipped: p.skips}
		detail, err := json.Marshal(payload)
		if err != nil {
			return batch, fmt.Errorf("alarm %s: %w", a.Key, err)
		}
		a.Detail = detail
		if p.s != nil {
			for _, name := range p.s.Notify {
				task := cfg.Tasks[name]
				if task == nil {
					continue // removed by a reload since the pass began
				}
				a.Notify = append(a.Notify, queue.NewJob{Key: store.NotifyKey(a.Key, name), AlarmKey: a.Key, Type: name, Payload: detail,
					Priority: task.Priority, MaxAttempts: task.MaxAttempts, Version: task.Version})
			}
		}
		batch.Alarms = append(batch.Alarms, a)
	}
	return batch, nil
}

func alarmKey(a store.NewAlarm) string {
	return store.AlarmKey(a.Schedule, a.Item, a.ScheduledAt, a.JobID, a.Kind)
}

// inZone formats t in RFC 3339 in loc; the zero time is "".
func inZone(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return t.In(loc).Format(time.RFC3339)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// setDeadlines replaces the deadlines Deadline reports.
func (b *Beat) setDeadlines(d map[string]time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deadlines = d
}

// setAlarmed replaces the schedules JobEnded takes to have open alarms.
func (b *Beat) setAlarmed(a map[string]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.alarmed = a
}

// markAlarmed adds schedule to those JobEnded takes to have open alarms.
func (b *Beat) markAlarmed(schedule string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.alarmed == nil {
		b.alarmed = map[string]bool{}
	}
	b.alarmed[schedule] = true
}

// setHeld records whether a recovery waits for a notification.
func (b *Beat) setHeld(held bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held = held
}

// NotificationEnded tells the beat that a notification job ended, done or
// dead, so that a recovery that waited for it is raised now rather than at
// the beat's next pass. It wakes the beat only when a recovery waited at
// the last pass. A daemon calls it from its pool's FinishedFunc. Safe for
// concurrent use; never blocks.
func (b *Beat) NotificationEnded() {
	b.mu.Lock()
	held := b.held
	b.mu.Unlock()
	if held {
		b.Wake()
	}
}

// JobEnded tells the beat that a job of schedule ended, dead or done, so
// that a dead alarm or a recovery is judged now rather than at the beat's
// next pass, up to MaxSleep later. It wakes the beat only when that pass
// can raise something: for a watched schedule, when the job is dead, or
// done while the schedule had open alarms at the last pass. A daemon calls
// it from its pool's FinishedFunc. Safe for concurrent use; never blocks.
func (b *Beat) JobEnded(schedule string, dead bool) {
	if schedule == "" {
		return
	}
	b.mu.Lock()
	s, _ := b.cfg.Schedule(schedule)
	wake := s != nil && s.Watched() && (dead || b.alarmed[schedule])
	b.mu.Unlock()
	if wake {
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
	b.mu.Lock()
	defer b.mu.Unlock()
	at, ok := b.deadlines[schedule]
	return at, ok
}
