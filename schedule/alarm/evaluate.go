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
)

// deadLookback is how far before its dead mark the evaluation looks for
// dead jobs again. A job's finished_at is taken when its result is
// computed, before its transaction waits for the write lock and commits, so
// a job may become visible as dead with a finished_at a little before a
// mark already passed. The keys of the alarms raised within the lookback
// are remembered, so that an evaluation proposes each once.
const deadLookback = 5 * time.Minute

// alarmRows bounds the rows one judgement of a schedule reads in an
// evaluation; the rest waits for the next one.
const alarmRows = 1000

// Evaluator judges the alarms of a config's watched schedules (see
// config.Schedule.Watched) from what the database holds, and raises them.
// One evaluation at a time: Evaluate must not be called concurrently.
// Finished and Deadline are safe for concurrent use.
type Evaluator struct {
	q   *queue.Client
	log *slog.Logger

	// Only the goroutine that calls Evaluate.
	deadSeen  map[string]time.Time // dead alarms raised within deadLookback, by key
	deadAfter time.Time            // where a truncated read of dead jobs goes on
	// marks caches the alarm marks: read once, then kept as this evaluator
	// writes them (another process's marks, being monotonic, only save
	// work).
	marks map[string]store.AlarmMark

	mu            sync.Mutex
	deadlines     map[string]time.Time // see Deadline
	alarmed       map[string]bool      // schedules with open alarms at the last evaluation (see Finished)
	recoveryWaits bool                 // a recovery waits for an alarm's notification (see Finished)
}

// New returns an Evaluator of the alarms stored in q, which logs each alarm
// it raises to log (nil discards).
func New(q *queue.Client, log *slog.Logger) *Evaluator {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Evaluator{q: q, log: log, deadSeen: map[string]time.Time{}}
}

// Cursors are the schedules' cursors around the beat's pass an evaluation
// follows, by schedule name.
type Cursors struct {
	// Before holds the cursors as the pass first read them, before it
	// materialised the instants due.
	Before map[string]store.Cursor
	// After holds the cursors as the pass left them: as read, moved by its
	// commits. Another beat's moves since are not in it: the judgement
	// then judges less, never wrongly.
	After map[string]store.Cursor
}

// Result is what an evaluation did.
type Result struct {
	// Next is the earliest time a start_within or deadline falls due; zero
	// if none.
	Next time.Time
	// Raised are the alarms this evaluation raised, not those another
	// process raised first.
	Raised []store.Alarm
}

// Evaluate judges, from the database, what happened since each watched
// schedule's alarm marks: instants past their start_within or deadline,
// misfire skips, dead jobs; and which open alarms recovered. It raises the
// new alarms with their notifications and moves the marks in one
// transaction, and logs each alarm it raised. A schedule is judged only up
// to its cursor in cur.After; one watched for the first time is judged
// from its cursor in cur.Before, so that the instants a downtime passed
// are judged too.
func (e *Evaluator) Evaluate(ctx context.Context, cfg *config.Config, now time.Time, cur Cursors) (Result, error) {
	var watched []*config.Schedule
	for _, s := range cfg.Schedules {
		if s.Watched() {
			watched = append(watched, s)
		}
	}
	if len(watched) == 0 {
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
		c, ok := cur.After[s.Name]
		if !ok {
			continue
		}
		if err := e.judgeSchedule(ctx, j, cfg, s, c.At, cur.Before, dead, deadThrough); err != nil {
			return Result{}, err
		}
	}
	recovered, missed, err := e.judgeRecoveries(ctx, cfg)
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
	if len(j.props) == 0 && len(j.marks) == 0 {
		return Result{Next: j.next}, nil
	}
	raised, err := e.raise(ctx, cfg, now, j.props, j.marks)
	if err != nil {
		return Result{}, err
	}
	e.logRaised(ctx, cfg, raised, deadlines)
	for key, at := range e.deadSeen {
		if now.Sub(at) > 2*deadLookback {
			delete(e.deadSeen, key)
		}
	}
	return Result{Next: j.next, Raised: raised}, nil
}

// readDead reads the dead jobs of every schedule since the oldest dead mark
// of watched, one range of an index of dead jobs per evaluation, and
// returns them and how far they go.
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
	// A flood of dead jobs: the next evaluation reads on from the last one
	// read, not from the lookback again (jobs that went dead in the same
	// millisecond as it and were not read are passed over).
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

// judgeSchedule judges the watched schedule s, whose cursor is at cursor,
// from its marks, and adds to j its alarms, its moved marks and its next
// limits.
func (e *Evaluator) judgeSchedule(ctx context.Context, j *judgement, cfg *config.Config, s *config.Schedule, cursor time.Time, before map[string]store.Cursor, dead []*queue.Job, deadThrough time.Time) error {
	now := j.now
	m, known := e.marks[s.Name]
	if !known {
		// A schedule watched for the first time is judged from its cursor
		// on: as the pass found it, before it materialised the instants
		// due, which may be the ones a downtime passed (a daemon stopped
		// before it judged anything).
		from := cursor
		if c, ok := before[s.Name]; ok {
			from = c.At
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
		// The dead look goes back deadLookback from its mark anyway: the
		// mark is written when it moved that far, not every evaluation.
		nm.Dead = m.Dead
	}
	if !known || nm != m {
		j.marks = append(j.marks, nm)
	}
	// The next limit due: of the first instant whose limit is still ahead
	// (an instant between the mark and it had no job to judge).
	if s.StartWithin > 0 {
		j.wakeAt(s.Expr().NextFrom(cursor, later(nm.Late, now.Add(-s.StartWithin))).Add(s.StartWithin))
	}
	if s.Deadline > 0 {
		j.deadline[s.Name] = s.Expr().NextFrom(cursor, later(nm.Missed, now.Add(-s.Deadline))).Add(s.Deadline)
		j.wakeAt(j.deadline[s.Name])
	}
	return nil
}

// logRaised logs each alarm this evaluation raised. A missed alarm moves
// its schedule's deadline in deadlines back to its instant's, unless an
// older one is there.
func (e *Evaluator) logRaised(ctx context.Context, cfg *config.Config, raised []store.Alarm, deadlines map[string]time.Time) {
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
		e.log.ErrorContext(ctx, "alarm raised", logKeySchedule, a.Schedule, logKeyItem, a.Item, logKeyInstant, instant,
			logKeyKind, string(a.Kind), logKeyJobID, a.JobID, logKeyError, a.Error)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
