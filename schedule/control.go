package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/schedule/cron"
)

// ErrUnknownSchedule is wrapped by the control functions' error for a name
// the configuration does not define.
var ErrUnknownSchedule = errors.New("unknown schedule")

// ErrUnknownItem is wrapped by Trigger's error for a TriggerOptions.Item
// that names no item of the schedule; the error lists them.
var ErrUnknownItem = errors.New("unknown item")

// ErrPayloadSetsItemKey is wrapped by Trigger's error for a
// TriggerOptions.Payload that sets a key of an item it runs: the job would
// be labelled as that item while running something else.
var ErrPayloadSetsItemKey = errors.New("payload sets a for_each key")

// ErrBackfillTooLarge is wrapped by Backfill's error for a range of more
// than MaxBackfill instants or MaxBackfillJobs jobs.
var ErrBackfillTooLarge = errors.New("backfill range too large")

// Limits of Backfill and NextN.
const (
	MaxBackfill     = 10000   // instants of one Backfill
	MaxBackfillJobs = 1000000 // jobs (instants times items) of one Backfill
	MaxNextN        = 100000  // instants of one NextN or NextRuns
)

func find(cfg *config.Config, name string) (*config.Schedule, error) {
	if cfg == nil {
		return nil, fmt.Errorf("schedule %q: %w", name, ErrUnknownSchedule)
	}
	s, ok := cfg.Schedule(name)
	if !ok {
		return nil, fmt.Errorf("schedule %q: %w", name, ErrUnknownSchedule)
	}
	return s, nil
}

// TriggerOptions refine Trigger.
type TriggerOptions struct {
	// Payload, a JSON object, is merged over each job's payload. It may
	// not set a key of an item it runs (ErrPayloadSetsItemKey).
	Payload json.RawMessage
	// Key makes the trigger idempotent: a second trigger with the same Key
	// inserts nothing. Empty makes a fresh key.
	Key string
	// Item, if set, runs only that item: its ID ("customer=acme") or a
	// value that names exactly one item ("acme"). Empty runs every item.
	Item string
	// Now is when the run is enqueued: the jobs' RunAt. Required.
	Now time.Time
	// TracerProvider, when set, makes the trigger a span, child of ctx's,
	// that parents its jobs. Default: nil; a span in ctx still parents
	// them.
	TracerProvider trace.TracerProvider
}

// CheckTriggerPayload checks a trigger's payload as an operator gave it,
// for -trigger -payload and the dashboard alike: within the bounds of
// every enqueue (queue.CheckPayload) and a JSON object.
func CheckTriggerPayload(p []byte) error {
	// Checked before decoding, whose cost grows with depth.
	if err := queue.CheckPayload(p); err != nil && !errors.Is(err, queue.ErrPayloadNotJSON) {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(p, &obj); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if obj == nil {
		return errors.New("not a JSON object: null")
	}
	return nil
}

// Trigger runs the schedule name now, outside its timetable: one job per
// item (or opts.Item's), enqueued in one transaction with the dedup key
// "schedule|item|manual|key". The jobs have a zero ScheduledAt, so a
// command sees an empty SCHEDULER_SCHEDULED_AT. It runs even while the
// schedule is paused and does not move its cursor. The fan-ins of the
// schedules after it, keyed as manual runs too, commit with the jobs.
func Trigger(ctx context.Context, q *queue.Client, cfg *config.Config, name string, opts TriggerOptions) ([]queue.Enqueued, error) {
	jobs, key, err := triggerJobs(cfg, name, opts)
	if err != nil {
		return nil, err
	}
	if opts.TracerProvider != nil {
		var span trace.Span
		ctx, span = startTrigger(ctx, opts.TracerProvider, name, opts)
		defer span.End()
	}
	s, _ := cfg.Schedule(name)
	var res []queue.Enqueued
	if specs := fanIns(cfg, s, opts.Now.UTC(), key); specs != nil {
		res, err = q.EnqueueWithFanIns(ctx, jobs, []store.AdvanceFanIn{{Specs: specs, N: len(jobs)}})
	} else {
		res, err = q.EnqueueBatch(ctx, jobs)
	}
	if err != nil {
		return nil, fmt.Errorf("trigger %s: %w", name, err)
	}
	return res, nil
}

// CheckTrigger returns the error Trigger would before reaching the queue.
func CheckTrigger(cfg *config.Config, name string, opts TriggerOptions) error {
	_, _, err := triggerJobs(cfg, name, opts)
	return err
}

// triggerJobs returns the jobs of a manual run and its key.
func triggerJobs(cfg *config.Config, name string, opts TriggerOptions) ([]queue.NewJob, string, error) {
	s, err := find(cfg, name)
	if err != nil {
		return nil, "", fmt.Errorf("trigger: %w", err)
	}
	if opts.Now.IsZero() {
		return nil, "", fmt.Errorf("trigger %s: no time given", name)
	}
	items := s.Items()
	if opts.Item != "" {
		it, err := findItem(s, opts.Item)
		if err != nil {
			return nil, "", fmt.Errorf("trigger %s: %w", name, err)
		}
		items = []config.Item{it}
	}
	var extra map[string]any
	if len(opts.Payload) > 0 {
		// Checked before decoding, whose cost grows with depth; the
		// decoder says best what is not JSON.
		if err := queue.CheckPayload(opts.Payload); err != nil && !errors.Is(err, queue.ErrPayloadNotJSON) {
			return nil, "", fmt.Errorf("trigger %s: %w", name, err)
		}
		if extra, err = config.DecodeObject(opts.Payload); err != nil {
			return nil, "", fmt.Errorf("trigger %s: %w", name, err)
		}
	}
	key := opts.Key
	if key == "" {
		var b [8]byte
		rand.Read(b[:])
		key = hex.EncodeToString(b[:])
	}
	task := cfg.Tasks[s.Task]
	at := opts.Now.UTC()
	jobs := make([]queue.NewJob, len(items))
	for i, it := range items {
		payload := it.Payload
		if len(extra) > 0 {
			for _, k := range slices.Sorted(maps.Keys(extra)) {
				if it.Sets(k) {
					return nil, "", fmt.Errorf("trigger %s: %w %q of item %s: the run would be labelled %s; pick the item with -item or leave %q out",
						name, ErrPayloadSetsItemKey, k, it.ID, it.ID, k)
				}
			}
			var err error
			if payload, err = it.Merge(extra); err != nil {
				return nil, "", fmt.Errorf("trigger %s: %w", name, err)
			}
			if err := queue.CheckPayload(payload); err != nil {
				return nil, "", fmt.Errorf("trigger %s: the payload merged over item %q: %w", name, it.ID, err)
			}
		}
		jobs[i] = runJob(s, task, it.ID, manualKey(s.Name, it.ID, key), payload, at)
		jobs[i].ScheduledAt = time.Time{}
	}
	return jobs, key, nil
}

// findItem returns the item with ID name, or the one with a value name.
func findItem(s *config.Schedule, name string) (config.Item, error) {
	var ids []string
	for _, it := range s.Items() {
		if it.ID == name {
			return it, nil
		}
		ids = append(ids, it.ID)
	}
	var found []config.Item
	for _, it := range s.Items() {
		for _, part := range strings.Split(it.ID, ",") {
			if _, v, _ := strings.Cut(part, "="); v == name {
				found = append(found, it)
				break
			}
		}
	}
	switch {
	case len(s.Items()) == 1 && s.Items()[0].ID == "":
		return config.Item{}, fmt.Errorf("%w %q: the schedule has no for_each", ErrUnknownItem, name)
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		var names []string
		for _, it := range found {
			names = append(names, it.ID)
		}
		return config.Item{}, fmt.Errorf("%w %q: it names several items (%s); give one's id", ErrUnknownItem, name, strings.Join(names, "; "))
	}
	return config.Item{}, fmt.Errorf("%w %q (have: %s)", ErrUnknownItem, name, strings.Join(ids, "; "))
}

// Pause durably stops the beat from materialising the schedule name until
// Resume. Its cursor stays. Pausing a paused schedule does nothing.
func Pause(ctx context.Context, q *queue.Client, cfg *config.Config, name string) error {
	_, err := PauseSettled(ctx, q, cfg, name)
	return err
}

// PauseSettled is Pause, reporting whether the schedule was paused
// already. Then nothing is written: the pause keeps its start, which
// tells Resume paused instants from those missed before.
func PauseSettled(ctx context.Context, q *queue.Client, cfg *config.Config, name string) (wasPaused bool, err error) {
	if _, err := find(cfg, name); err != nil {
		return false, fmt.Errorf("pause: %w", err)
	}
	cursors, err := q.Cursors(ctx)
	if err != nil {
		return false, fmt.Errorf("pause %s: %w", name, err)
	}
	if cursors[name].Paused {
		return true, nil
	}
	if err := q.SetPaused(ctx, name, true); err != nil {
		return false, fmt.Errorf("pause %s: %w", name, err)
	}
	return false, nil
}

// Resume lets the beat materialise the schedule name again. The instants
// passed while paused, up to now, are settled in the transaction that
// resumes it: with skipMissed all are skipped; otherwise catch_up alone
// decides which run, since none was on time. An instant not run is
// skipped as store.SkipPaused if after the pause, else store.SkipMisfire
// (the daemon was down). Resuming a schedule not paused does nothing.
func Resume(ctx context.Context, q *queue.Client, cfg *config.Config, name string, now time.Time, skipMissed bool) error {
	_, err := ResumeSettled(ctx, q, cfg, name, now, skipMissed)
	return err
}

// Resumed is what ResumeSettled did.
type Resumed struct {
	WasPaused bool // false: nothing was done
	Runs      int  // missed instants enqueued to run
	Skipped   int  // missed instants recorded as skipped
}

// ResumeSettled is Resume, reporting what it settled.
func ResumeSettled(ctx context.Context, q *queue.Client, cfg *config.Config, name string, now time.Time, skipMissed bool) (Resumed, error) {
	s, err := find(cfg, name)
	if err != nil {
		return Resumed{}, fmt.Errorf("resume: %w", err)
	}
	for attempt := 0; ; attempt++ {
		cursors, err := q.Cursors(ctx)
		if err != nil {
			return Resumed{}, fmt.Errorf("resume %s: %w", name, err)
		}
		cur, ok := cursors[name]
		r := Resumed{WasPaused: ok && cur.Paused}
		switch {
		case !ok:
			err = q.SetPaused(ctx, name, false) // creates the cursor at now
		case !cur.Paused:
			return Resumed{}, nil
		default:
			r.Runs, r.Skipped, err = settle(ctx, q, cfg, s, cur, now, skipMissed)
		}
		switch {
		case err == nil:
			return r, nil
		case !errors.Is(err, store.ErrCursorMoved) || attempt == maxAdvanceRetries:
			return Resumed{}, fmt.Errorf("resume %s: %w", name, err)
		}
	}
}

// settle materialises a pause's instants and resumes s in one Advance.
func settle(ctx context.Context, q *queue.Client, cfg *config.Config, s *config.Schedule, cur store.Cursor, now time.Time, skipMissed bool) (runs, skipped int, err error) {
	due, _ := s.Expr().Between(cur.At, now, maxInstantsPerAdvance)
	to := cur.At
	if len(due) > 0 {
		to = due[len(due)-1].At
	}
	run, skips := cron.Plan(due, now, cron.NoGrace, s.CatchUp, s.CatchUpLimit, skipMissed)
	adv := buildAdvance(cfg, s, cur.At, to, run, skips, pauseReason(cur.PausedAt), now)
	adv.Paused, adv.Resume = true, true
	if _, err := q.Advance(ctx, adv); err != nil {
		return 0, 0, err
	}
	return len(run), len(skips), nil
}

// NextN returns the schedule name's next n runs after from, in its zone.
// "@every" counts from from; NextRuns can count from the cursor, as the
// beat does.
func NextN(cfg *config.Config, name string, from time.Time, n int) ([]time.Time, error) {
	runs, err := NextRuns(cfg, name, n, NextOptions{From: from})
	if err != nil {
		return nil, err
	}
	out := make([]time.Time, len(runs))
	for i, r := range runs {
		out[i] = r.At
	}
	return out, nil
}

// NextOptions refine NextRuns.
type NextOptions struct {
	// From: the runs returned are after From. Required.
	From time.Time
	// Cursor is the schedule's cursor: "@every D" runs are Cursor+kD, as
	// the beat counts them. Zero counts from From. Calendar expressions
	// ignore it.
	Cursor time.Time
}

// NextRun is one upcoming run of a schedule.
type NextRun struct {
	At time.Time // in the schedule's zone
	// DST is cron.DSTMoved or cron.DSTFolded when a daylight-saving rule
	// acted on the run, and Note says how; both are empty otherwise.
	DST  string
	Note string
}

// NextRuns returns the next n runs of the schedule name after opts.From,
// marking those that a daylight-saving rule moved or folded.
func NextRuns(cfg *config.Config, name string, n int, opts NextOptions) ([]NextRun, error) {
	s, err := find(cfg, name)
	if err != nil {
		return nil, fmt.Errorf("next: %w", err)
	}
	if n < 1 || n > MaxNextN {
		return nil, fmt.Errorf("next %s: %d instants: want 1 to %d", name, n, MaxNextN)
	}
	out := make([]NextRun, 0, min(n, 1024))
	if every := s.Expr().Every(); every > 0 {
		at := opts.From.Add(every)
		if c := opts.Cursor; !c.IsZero() {
			// The first Cursor+kD after From, k floored.
			d := opts.From.Sub(c)
			k := d / every
			if d < 0 && d%every != 0 {
				k--
			}
			at = c.Add((k + 1) * every)
		}
		for ; len(out) < n; at = at.Add(every) {
			out = append(out, NextRun{At: at.In(s.Location)})
		}
		return out, nil
	}
	for t := opts.From; len(out) < n; {
		if t = s.Expr().Next(t); t.IsZero() {
			break
		}
		mark, note := s.Expr().DSTMark(t)
		out = append(out, NextRun{At: t, DST: mark, Note: note})
	}
	return out, nil
}

// Backfill enqueues in one transaction the runs of the schedule name at
// every instant in [from, to], one job per item, with the beat's dedup
// keys: no instant is inserted twice. It does not move the cursor and
// ignores pause and overlap. "@every" counts from from. More than
// MaxBackfill instants or MaxBackfillJobs jobs is an error.
func Backfill(ctx context.Context, q *queue.Client, cfg *config.Config, name string, from, to time.Time) ([]queue.Enqueued, error) {
	s, err := find(cfg, name)
	if err != nil {
		return nil, fmt.Errorf("backfill: %w", err)
	}
	if to.Before(from) {
		return nil, fmt.Errorf("backfill %s: range ends before it starts", name)
	}
	var instants []time.Time
	limit := min(MaxBackfill, MaxBackfillJobs/len(s.Items()))
	t := s.Expr().Next(from.Add(-time.Nanosecond))
	if s.Expr().Every() > 0 {
		t = from
	}
	for ; !t.IsZero() && !t.After(to); t = s.Expr().Next(t) {
		if len(instants) == limit {
			return nil, fmt.Errorf("backfill %s: %w: more than %d instants of %d items in range", name, ErrBackfillTooLarge, limit, len(s.Items()))
		}
		instants = append(instants, t)
	}
	if len(instants) == 0 {
		return nil, nil
	}
	task := cfg.Tasks[s.Task]
	jobs := make([]queue.NewJob, 0, len(instants)*len(s.Items()))
	var groups []store.AdvanceFanIn
	for _, at := range instants {
		at = at.UTC()
		first := len(jobs)
		for _, it := range s.Items() {
			jobs = append(jobs, runJob(s, task, it.ID, DedupKey(s.Name, it.ID, at), it.Payload, at))
		}
		if specs := fanIns(cfg, s, at, ""); specs != nil {
			groups = append(groups, store.AdvanceFanIn{Specs: specs, First: first, N: len(jobs) - first})
		}
	}
	var res []queue.Enqueued
	if groups != nil {
		res, err = q.EnqueueWithFanIns(ctx, jobs, groups)
	} else {
		res, err = q.EnqueueBatch(ctx, jobs)
	}
	if err != nil {
		return nil, fmt.Errorf("backfill %s: %w", name, err)
	}
	return res, nil
}
