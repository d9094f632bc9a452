package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"scheduler/queue"
)

// ErrUnknownSchedule is wrapped by the control functions' error for a name
// that the configuration does not define.
var ErrUnknownSchedule = errors.New("unknown schedule")

// Limits of Backfill and NextN.
const (
	MaxBackfill     = 10000   // instants of one Backfill
	MaxBackfillJobs = 1000000 // jobs (instants times items) of one Backfill
	MaxNextN        = 10000   // instants of one NextN
)

func find(cfg *Config, name string) (*Schedule, error) {
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
	// Payload, a JSON object, is merged over each job's payload (the
	// schedule's payload and the item's keys). Empty adds nothing.
	Payload json.RawMessage
	// Key makes the trigger idempotent: a second trigger with the same Key
	// inserts nothing. Empty makes a fresh key.
	Key string
	// Now is the instant the run stands for: the jobs' RunAt and
	// ScheduledAt. Required.
	Now time.Time
}

// Trigger runs the schedule name now, outside its timetable: one job per
// fan-out item, enqueued durably in one transaction, with the dedup key
// "schedule|item|manual|key". It runs even while the schedule is paused and
// does not move its cursor.
func Trigger(ctx context.Context, q *queue.Queue, cfg *Config, name string, opts TriggerOptions) ([]queue.Enqueued, error) {
	s, err := find(cfg, name)
	if err != nil {
		return nil, fmt.Errorf("trigger: %w", err)
	}
	if opts.Now.IsZero() {
		return nil, fmt.Errorf("trigger %s: no time given", name)
	}
	var extra map[string]any
	if len(opts.Payload) > 0 {
		if extra, err = decodeObject(opts.Payload); err != nil {
			return nil, fmt.Errorf("trigger %s: %w", name, err)
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
	jobs := make([]queue.NewJob, len(s.items))
	for i, it := range s.items {
		payload := it.Payload
		if len(extra) > 0 {
			base, err := decodeObject(it.Payload)
			if err != nil {
				return nil, fmt.Errorf("trigger %s: %w", name, err)
			}
			if payload, err = encodePayload(merge(base, extra)); err != nil {
				return nil, fmt.Errorf("trigger %s: %w", name, err)
			}
		}
		jobs[i] = runJob(s, task, it.ID, manualKey(s.Name, it.ID, key), payload, at)
	}
	res, err := q.EnqueueBatch(ctx, jobs)
	if err != nil {
		return nil, fmt.Errorf("trigger %s: %w", name, err)
	}
	return res, nil
}

// Pause stops the beat from materialising the schedule name, durably, until
// Resume. Its cursor stays where it is.
func Pause(ctx context.Context, q *queue.Queue, cfg *Config, name string) error {
	if _, err := find(cfg, name); err != nil {
		return fmt.Errorf("pause: %w", err)
	}
	if err := q.SetPaused(ctx, name, true); err != nil {
		return fmt.Errorf("pause %s: %w", name, err)
	}
	return nil
}

// Resume lets the beat materialise the schedule name again. The instants
// that passed while it was paused, up to and including now, are settled in
// the same transaction that resumes it: with skipMissed they are all
// recorded as skipped; otherwise the schedule's catch_up policy alone
// decides which run (misfire_grace does not apply: none of them was on
// time): "none" runs none of them, "latest" the newest one, "all" the newest
// catch_up_limit. Each instant not run is recorded as skipped, with reason
// queue.SkipPaused if it fell after the pause and queue.SkipMisfire if the
// beat had missed it before (the daemon was down). Resuming a schedule that
// is not paused does nothing.
func Resume(ctx context.Context, q *queue.Queue, cfg *Config, name string, now time.Time, skipMissed bool) error {
	s, err := find(cfg, name)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	for attempt := 0; ; attempt++ {
		cursors, err := q.Cursors(ctx)
		if err != nil {
			return fmt.Errorf("resume %s: %w", name, err)
		}
		cur, ok := cursors[name]
		switch {
		case !ok:
			err = q.SetPaused(ctx, name, false) // creates the cursor at now
		case !cur.Paused:
			return nil
		default:
			err = settle(ctx, q, cfg, s, cur, now, skipMissed)
		}
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, queue.ErrCursorMoved) || attempt == maxAdvanceRetries:
			return fmt.Errorf("resume %s: %w", name, err)
		}
	}
}

// settle materialises the instants a pause missed, up to now, and resumes
// the schedule, in one Advance.
func settle(ctx context.Context, q *queue.Queue, cfg *Config, s *Schedule, cur queue.Cursor, now time.Time, skipMissed bool) error {
	due, _ := s.spec.between(cur.At, now, maxInstantsPerAdvance)
	to := cur.At
	if len(due) > 0 {
		to = due[len(due)-1].at
	}
	runs, skips := planInstants(due, now, noGrace, s.CatchUp, s.CatchUpLimit, pauseReason(cur.PausedAt), skipMissed)
	adv := buildAdvance(cfg, s, cur.At, to, runs, skips, now)
	adv.Paused, adv.Resume = true, true
	_, err := q.Advance(ctx, adv)
	return err
}

// NextN returns the next n instants after from at which the schedule name
// runs, in the schedule's zone (so each carries its UTC offset). For
// "@every" they are counted from from.
func NextN(cfg *Config, name string, from time.Time, n int) ([]time.Time, error) {
	s, err := find(cfg, name)
	if err != nil {
		return nil, fmt.Errorf("next: %w", err)
	}
	if n < 1 || n > MaxNextN {
		return nil, fmt.Errorf("next %s: %d instants: want 1 to %d", name, n, MaxNextN)
	}
	out := make([]time.Time, 0, n)
	for t := from; len(out) < n; {
		if t = s.spec.Next(t); t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out, nil
}

// Backfill enqueues the runs of the schedule name at every instant in
// [from, to], one job per item, durably in one transaction. The jobs carry
// the dedup keys the beat uses, so a backfill repeated, or overlapping
// instants the beat materialised, inserts nothing twice. It does not move
// the cursor and ignores pause and overlap. For "@every" the instants are
// counted from from. More than MaxBackfill instants, or MaxBackfillJobs
// jobs, is an error and enqueues nothing.
func Backfill(ctx context.Context, q *queue.Queue, cfg *Config, name string, from, to time.Time) ([]queue.Enqueued, error) {
	s, err := find(cfg, name)
	if err != nil {
		return nil, fmt.Errorf("backfill: %w", err)
	}
	if to.Before(from) {
		return nil, fmt.Errorf("backfill %s: range ends before it starts", name)
	}
	var instants []time.Time
	limit := min(MaxBackfill, MaxBackfillJobs/len(s.items))
	t := s.spec.Next(from.Add(-time.Nanosecond))
	if s.spec.every > 0 {
		t = from
	}
	for ; !t.IsZero() && !t.After(to); t = s.spec.Next(t) {
		if len(instants) == limit {
			return nil, fmt.Errorf("backfill %s: more than %d instants of %d items in range", name, limit, len(s.items))
		}
		instants = append(instants, t)
	}
	if len(instants) == 0 {
		return nil, nil
	}
	task := cfg.Tasks[s.Task]
	jobs := make([]queue.NewJob, 0, len(instants)*len(s.items))
	for _, at := range instants {
		at = at.UTC()
		for _, it := range s.items {
			jobs = append(jobs, runJob(s, task, it.ID, DedupKey(s.Name, it.ID, at), it.Payload, at))
		}
	}
	res, err := q.EnqueueBatch(ctx, jobs)
	if err != nil {
		return nil, fmt.Errorf("backfill %s: %w", name, err)
	}
	return res, nil
}
