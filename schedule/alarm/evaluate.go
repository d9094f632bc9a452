package alarm

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// Log attribute keys.
const (
	logKeySchedule = "schedule"
	logKeyItem     = "item"
	logKeyInstant  = "instant"
	logKeyKind     = "kind"
	logKeyJobID    = "job_id"
	logKeyError    = "error"
	logKeyIncident = "incident"
	logKeyCount    = "count"
	logKeyNotice   = "notice"
	logKeyReminder = "reminder"
)

// deadLookback is how far before its dead mark an evaluation looks for
// dead jobs again: finished_at is taken before the job's transaction
// commits, so a job may turn dead with a finished_at behind a mark. Keys
// raised within it are remembered so each is proposed once.
const deadLookback = 5 * time.Minute

// alarmRows bounds one judgement's rows; the next evaluation reads on.
const alarmRows = 1000

// Evaluator judges and raises the alarms of a config's watched schedules.
// Evaluate must not be called concurrently; Finished and Deadline are
// safe for concurrent use.
type Evaluator struct {
	q   *queue.Client
	log *slog.Logger

	// Only the goroutine that calls Evaluate.
	seen      map[string]time.Time // dead and upstream alarms raised within deadLookback, by key
	deadAfter time.Time            // where a truncated read of dead jobs goes on
	// upstreamAfter is where a truncated read of a schedule's upstream
	// failures goes on, by schedule.
	upstreamAfter map[string]time.Time
	// marks are read once, then kept as written. Another process's marks
	// are monotonic, so missing them only costs work.
	marks map[string]store.AlarmMark

	mu            sync.Mutex
	deadlines     map[string]time.Time // see Deadline
	alarmed       map[string]bool      // schedules with open alarms; see Finished
	recoveryWaits bool                 // a recovery waits for a notification
}

// New returns an Evaluator of q's alarms that logs to log (nil discards).
func New(q *queue.Client, log *slog.Logger) *Evaluator {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Evaluator{q: q, log: log, seen: map[string]time.Time{}, upstreamAfter: map[string]time.Time{}}
}

// Cursors are the schedules' cursors around the beat's pass an
// evaluation follows, by schedule name.
type Cursors interface {
	// Before returns a schedule's cursor as the pass read it.
	Before(schedule string) (time.Time, bool)
	// After returns it as the pass left it. Another beat's later moves
	// are missing: the judgement then judges less, never wrongly.
	After(schedule string) (time.Time, bool)
}

// Result is what an evaluation did.
type Result struct {
	// Next is when the next start_within or deadline falls due, or zero.
	Next time.Time
	// Raised are the alarms raised here, not by another process.
	Raised []store.Alarm
}

// Evaluate judges what happened since each watched schedule's marks:
// instants past start_within or deadline, misfire skips, dead jobs,
// upstream failures that skipped a schedule with after, and recoveries. In one transaction it raises the new alarms with their
// notifications and moves the marks; it logs each alarm raised. A
// schedule is judged up to its cursor in cur.After; a newly watched one
// from its cursor in cur.Before, so instants a downtime passed count too.
func (e *Evaluator) Evaluate(ctx context.Context, cfg *config.Config, now time.Time, cur Cursors) (Result, error) {
	var watched []*config.Schedule
	for _, s := range cfg.Schedules {
		if s.Watched() {
			watched = append(watched, s)
		}
	}
	followers := watchedFollowers(cfg)
	if len(watched) == 0 && len(followers) == 0 {
		e.setDeadlines(nil)
		return Result{}, nil
	}
	if e.marks == nil {
		marks, err := e.q.AlarmMarks(ctx)
		if err != nil {
			return Result{}, err
		}
		e.marks = marks
	}
	dead, deadThrough, err := e.readDead(ctx, watched, now)
	if err != nil {
		return Result{}, err
	}
	j := &judgement{now: now, deadline: map[string]time.Time{}}
	for _, s := range watched {
		at, ok := cur.After(s.Name)
		if !ok {
			continue
		}
		if err := e.judgeSchedule(ctx, j, cfg, s, at, cur, dead, deadThrough); err != nil {
			return Result{}, err
		}
	}
	for _, s := range followers {
		if err := e.judgeUpstream(ctx, j, s); err != nil {
			return Result{}, err
		}
	}
	recovered, missed, waits, err := e.judgeRecoveries(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	j.props = append(j.props, recovered...)
	deadlines := map[string]time.Time{}
	for name, at := range j.deadline {
		deadlines[name] = at
		if m, ok := missed[name]; ok {
			deadlines[name] = m
		}
	}
	defer func() { e.setDeadlines(deadlines) }()
	plan, err := e.planIncidents(ctx, cfg, j)
	if err != nil {
		return Result{}, err
	}
	if len(j.props) == 0 && len(j.marks) == 0 && len(plan.reminders) == 0 && len(plan.successes) == 0 {
		e.setRecoveryWaits(waits || plan.waits)
		return Result{Next: j.next}, nil
	}
	out, err := e.raise(ctx, cfg, now, j.props, j.marks, plan)
	if err != nil {
		return Result{}, err
	}
	e.setRecoveryWaits(waits || plan.waits || out.Waiting)
	wakeForReminders(cfg, j, out)
	e.moveDeadlines(cfg, out.Raised, deadlines)
	e.logOutcome(ctx, cfg, out)
	for key, at := range e.seen {
		if now.Sub(at) > 2*deadLookback {
			delete(e.seen, key)
		}
	}
	return Result{Next: j.next, Raised: out.Raised}, nil
}

// readDead reads dead jobs since the oldest dead mark of watched, up to
// alarmRows, and returns them and how far they go.
func (e *Evaluator) readDead(ctx context.Context, watched []*config.Schedule, now time.Time) ([]*queue.Job, time.Time, error) {
	deadFrom := now
	for _, s := range watched {
		if m, ok := e.marks[s.Name]; ok && m.Dead.Before(deadFrom) {
			deadFrom = m.Dead
		}
	}
	dead, err := e.q.DeadJobs(ctx, later(deadFrom.Add(-deadLookback), e.deadAfter), alarmRows)
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(dead) < alarmRows {
		return dead, now, nil
	}
	// A flood: the next evaluation reads on from the last job read (jobs
	// dead in the same millisecond and unread are passed over).
	e.deadAfter = dead[len(dead)-1].FinishedAt
	return dead, e.deadAfter, nil
}

// judgement gathers what an evaluation proposes.
type judgement struct {
	now      time.Time
	props    []proposed
	marks    []store.AlarmMark    // the marks that moved
	next     time.Time            // the earliest limit ahead of now
	deadline map[string]time.Time // each schedule's next deadline
}

// wakeAt notes a limit that falls due at at.
func (j *judgement) wakeAt(at time.Time) {
	if at.After(j.now) && (j.next.IsZero() || at.Before(j.next)) {
		j.next = at
	}
}

// judgeSchedule judges s up to cursor from its marks, and adds to j its
// alarms, moved marks and next limits.
func (e *Evaluator) judgeSchedule(ctx context.Context, j *judgement, cfg *config.Config, s *config.Schedule, cursor time.Time, cur Cursors, dead []*queue.Job, deadThrough time.Time) error {
	now := j.now
	m, known := e.marks[s.Name]
	if !known {
		// Newly watched: judge from the cursor the pass found, so the
		// instants a downtime passed are judged.
		from := cursor
		if at, ok := cur.Before(s.Name); ok {
			from = at
		}
		m = store.AlarmMark{Schedule: s.Name, Late: from, Missed: from, Misfire: from, Dead: now}
	}
	nm := m
	var ps []proposed
	var err error
	if nm.Late, ps, err = e.judgeInstants(ctx, cfg, s, store.AlarmLate, s.StartWithin, m.Late, cursor, now); err != nil {
		return err
	}
	j.props = append(j.props, ps...)
	if nm.Missed, ps, err = e.judgeInstants(ctx, cfg, s, store.AlarmMissed, s.Deadline, m.Missed, cursor, now); err != nil {
		return err
	}
	j.props = append(j.props, ps...)
	if nm.Misfire, ps, err = e.judgeMisfires(ctx, s, m.Misfire, cursor); err != nil {
		return err
	}
	j.props = append(j.props, ps...)
	j.props = append(j.props, e.judgeDead(cfg, s, dead, m.Dead)...)
	nm.Dead = later(m.Dead, deadThrough)
	if known && nm.Dead.Sub(m.Dead) < deadLookback {
		// Reads look back deadLookback anyway: write the mark only once
		// it has moved that far.
		nm.Dead = m.Dead
	}
	if !known || nm != m {
		j.marks = append(j.marks, nm)
	}
	// The next limit is that of the first instant whose limit is ahead.
	if s.StartWithin > 0 {
		j.wakeAt(s.Expr().NextFrom(cursor, later(nm.Late, now.Add(-s.StartWithin))).Add(s.StartWithin))
	}
	if s.Deadline > 0 {
		j.deadline[s.Name] = s.Expr().NextFrom(cursor, later(nm.Missed, now.Add(-s.Deadline))).Add(s.Deadline)
		j.wakeAt(j.deadline[s.Name])
	}
	return nil
}

// moveDeadlines moves, for each missed alarm raised, its schedule's entry
// in deadlines back to its instant's deadline, if older.
func (e *Evaluator) moveDeadlines(cfg *config.Config, raised []store.Alarm, deadlines map[string]time.Time) {
	for _, a := range raised {
		if a.Kind != store.AlarmMissed {
			continue
		}
		if s, ok := scheduleOf(cfg, a.Schedule); ok && s.Deadline > 0 {
			if at, ok := deadlines[a.Schedule]; ok && a.ScheduledAt.Add(s.Deadline).Before(at) {
				deadlines[a.Schedule] = a.ScheduledAt.Add(s.Deadline)
			}
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
