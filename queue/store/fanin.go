package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A fan-in is a set of member jobs and one job, Then, enqueued once every
// member has ended. Its row counts the members that ended; each transaction
// that moves a member into or out of a terminal state adds its moves
// (FanInDeltas) and settles the fan-in in the same transaction
// (SettleFanIns), so the decision is atomic with the last member's end.

// Require says what a fan-in's members must achieve for its job to run.
type Require string

// The requirements of a fan-in.
const (
	RequireEnded Require = "ended" // every member ended, whatever its outcome
	RequireDone  Require = "done"  // every member ended done; else the fan-in is skipped
)

// Valid reports whether r is one of the requirements above.
func (r Require) Valid() bool { return r == RequireEnded || r == RequireDone }

// FanInState is where a fan-in stands.
type FanInState string

// The states of a fan-in. A skipped fan-in (RequireDone, a member failed)
// fires once its failed members are retried and every member ended done; a
// fired one never fires again.
const (
	FanInWaiting FanInState = "waiting"
	FanInFired   FanInState = "fired"
	FanInSkipped FanInState = "skipped"
)

// SkipUpstreamFailed is the skip of a fan-in's job whose members did not all
// end done, under RequireDone.
const SkipUpstreamFailed SkipReason = "upstream failed"

// Terminal reports whether a job in state s has ended: its fan-in counts it.
func Terminal(s State) bool {
	return s == StateDone || s == StateDead || s == StateCancelled || s == StateDiscarded
}

// NewFanIn describes jobs enqueued together with a job that runs once every
// one of them has ended.
type NewFanIn struct {
	// Key names the fan-in: a second enqueue with the same Key inserts
	// nothing. Empty means a fresh random key.
	Key  string
	Jobs []NewJob // the members; their keys follow NewJob.Key's rules
	// Then is enqueued when the last member ends (see Require). Its
	// payload, a JSON object, gets one list per terminal state ("done",
	// "dead", "cancelled") of the members that ended so: each member's
	// Item, or its Key when it has none. An empty Key means "<Key>|then";
	// a zero RunAt, at once.
	Then    NewJob
	Require Require // zero means RequireEnded
	// Also are further fan-ins over the same members, each with its own
	// Key, Then and Require: several steps after one set of jobs.
	Also []FanInSpec
	// Next are fan-ins over Then's job, inserted with it when it is
	// enqueued: a chain of steps, each once the one before it ended.
	Next []FanInSpec
}

// FanInSpec is a fan-in's own part of a NewFanIn, without its members.
type FanInSpec struct {
	Key     string
	Then    NewJob
	Require Require
	// Next are fan-ins over Then's job, inserted with it when it is
	// enqueued (see NewFanIn.Next).
	Next []FanInSpec
	// Run names the manual run Then belongs to when Then stands for no
	// instant (a zero ScheduledAt) but has a Schedule: a skip of the
	// fan-in is recorded under the item ManualRunItem(Run), at the
	// fan-in's creation. Without it such a skip records no Skip.
	Run string
}

// manualRunPrefix begins the item of a manual run's skip.
const manualRunPrefix = "manual|"

// ManualRunItem returns the Item of the skip of a fan-in of the manual run
// run (FanInSpec.Run). A schedule after another gets one job per upstream
// instant, of item "", so a manual run's skip never has the key (schedule,
// item, instant) of an instant's, whatever the time of the run; nor of
// another manual run's, whose key differs.
func ManualRunItem(run string) string { return manualRunPrefix + run }

// ManualRunOf returns the manual run a skip's item names (see
// ManualRunItem), and whether it names one.
func ManualRunOf(item string) (string, bool) { return strings.CutPrefix(item, manualRunPrefix) }

// ManualFanInKey returns the key of the fan-in of schedule's job after the
// manual run run of its upstream, as package schedule keys it:
// "fanin|schedule||manual|run".
func ManualFanInKey(schedule, run string) string {
	return "fanin|" + schedule + "||" + manualRunPrefix + run
}

// FanInEnqueued is what enqueueing a fan-in did.
type FanInEnqueued struct {
	ID       int64
	Key      string
	Inserted bool       // false: a fan-in with this Key existed, and nothing was inserted
	Jobs     []Enqueued // the members, in order; nil when not Inserted
}

// FanIn is a stored fan-in.
type FanIn struct {
	ID       int64
	Key      string
	Require  Require
	State    FanInState
	Expected int   // members
	Ended    int   // members in a terminal state
	Done     int   // members done
	JobID    int64 // Then's id once fired, else 0
	// Then's type, schedule and instant, as enqueued.
	Type        string
	Schedule    string
	Item        string
	ScheduledAt time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// FanInDeltas are a transaction's moves of fan-in members, by fan-in id.
type FanInDeltas map[int64]*FanInDelta

// FanInDelta is the change of one fan-in's counts.
type FanInDelta struct{ Ended, Done int }

// Move records a member of fan-in id moving from state from to state to; id
// 0 (no fan-in) records nothing.
func (d FanInDeltas) Move(id int64, from, to State) {
	if id == 0 || from == to {
		return
	}
	c := d[id]
	if c == nil {
		c = &FanInDelta{}
		d[id] = c
	}
	c.Ended += b2i(Terminal(to)) - b2i(Terminal(from))
	c.Done += b2i(to == StateDone) - b2i(from == StateDone)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// MoveTypesFanIns is MoveTypes for rows of (type, fan-in id or NULL), also
// recording the members' moves in f.
func MoveTypesFanIns(r Reading, d CountDeltas, f FanInDeltas, from, to State) (int64, error) {
	var n int64
	err := r.Each(func(r Row) (bool, error) {
		var typ string
		var id *int64
		if err := r.Scan(&typ, &id); err != nil {
			return false, err
		}
		d.Move(typ, from, to, 1)
		if id != nil {
			f.Move(*id, from, to)
		}
		n++
		return true, nil
	})
	return n, err
}

// thenKey returns the key of s's job.
func (s FanInSpec) thenKey() string { return cmp.Or(s.Then.Key, s.Key+"|then") }

// PrepareFanIn checks s and fills its defaults at now.
func PrepareFanIn(s FanInSpec, now time.Time) (FanInSpec, error) {
	if s.Key == "" {
		s.Key = RandomKey(now)
	}
	if s.Require == "" {
		s.Require = RequireEnded
	}
	if !s.Require.Valid() {
		return s, fmt.Errorf("fan-in %q: require %q is not %q or %q", s.Key, s.Require, RequireEnded, RequireDone)
	}
	s.Then.Key = s.thenKey()
	if s.Then.SkipIfActive {
		return s, fmt.Errorf("fan-in %q: its job cannot skip if active", s.Key)
	}
	if _, err := PrepareJobs([]NewJob{s.Then}, now); err != nil {
		return s, fmt.Errorf("fan-in %q: %w", s.Key, err)
	}
	if len(s.Then.Payload) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(s.Then.Payload, &obj); err != nil || obj == nil {
			return s, fmt.Errorf("fan-in %q: its job's payload is not a JSON object", s.Key)
		}
	}
	next, err := PrepareFanIns(s.Next, now)
	if err != nil {
		return s, fmt.Errorf("fan-in %q: %w", s.Key, err)
	}
	s.Next = next
	return s, nil
}

// InsertFanIns inserts the prepared fan-ins specs over the same members in
// tx, the members being members[i] for the ids of those inserted: the first
// adopts them, the others share them, and a group of no member settles at
// once. It returns the first's id and whether it was new; an existing
// group is left as it is.
func InsertFanIns(ctx context.Context, e *Base, tx Tx, specs []FanInSpec, members []Enqueued, now time.Time) (int64, bool, error) {
	id, inserted, err := insertFanInRow(ctx, e, tx, specs[0], nil, now)
	if err != nil || !inserted {
		return id, false, err
	}
	for _, s := range specs[1:] {
		if _, _, err := insertFanInRow(ctx, e, tx, s, &id, now); err != nil {
			return id, false, err
		}
	}
	return id, true, adoptMembers(ctx, e, tx, id, members, now)
}

func insertFanInRow(ctx context.Context, e *Base, tx Tx, s FanInSpec, shareOf *int64, now time.Time) (int64, bool, error) {
	then, err := json.Marshal(thenRecord{NewJob: s.Then, Next: s.Next, Run: s.Run})
	if err != nil {
		return 0, false, err
	}
	var id int64
	err = tx.QueryRow(ctx, e.q.InsertFanIn, s.Key, string(s.Require), string(then), s.Then.Type,
		TextOrNull(s.Then.Schedule), s.Then.Item, OrNull(s.Then.ScheduledAt), now, shareOf).Scan(&id)
	switch {
	case errors.Is(err, ErrNoRows):
		if err := tx.QueryRow(ctx, e.q.FanInIDByKey, s.Key).Scan(&id); err != nil {
			return 0, false, fmt.Errorf("look up fan-in %q: %w", s.Key, err)
		}
		return id, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("insert fan-in %q: %w", s.Key, err)
	}
	return id, true, nil
}

// adoptMembers makes the inserted of members fan-in id's, sets how many it
// waits for, and settles it if none.
func adoptMembers(ctx context.Context, e *Base, tx Tx, id int64, members []Enqueued, now time.Time) error {
	var ids []int64
	for _, m := range members {
		if m.Inserted && !m.Skipped {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) > 0 {
		if _, err := tx.Exec(ctx, e.q.AdoptMembers, id, ids); err != nil {
			return fmt.Errorf("adopt fan-in members: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, e.q.SetFanInExpected, len(ids), id); err != nil {
		return fmt.Errorf("count fan-in members: %w", err)
	}
	if len(ids) > 0 {
		return nil
	}
	_, err := SettleFanIns(ctx, e, tx, FanInDeltas{id: {}}, now)
	return err
}

// SettleFanIns adds d's moves to their fan-ins in tx, in id order so that
// transactions lock them in one order, with those sharing their members
// under their lock, and fires or skips each whose members have all ended.
// It reports whether it enqueued a job: the caller wakes the pools after
// the commit.
func SettleFanIns(ctx context.Context, e *Base, tx Tx, d FanInDeltas, now time.Time) (bool, error) {
	ids := make([]int64, 0, len(d))
	for id := range d {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	fired := false
	for _, id := range ids {
		counts, err := moveGroup(ctx, e, tx, id, *d[id], now)
		if err != nil {
			return false, err
		}
		for _, c := range counts {
			switch decide(c.require, c.state, c.expected, c.ended, c.done) {
			case FanInFired:
				if err := fire(ctx, e, tx, c.id, now); err != nil {
					return false, err
				}
				fired = true
			case FanInSkipped:
				if err := skip(ctx, e, tx, c.id, now); err != nil {
					return false, err
				}
			}
		}
	}
	return fired, nil
}

// fanInCounts is a fan-in's counts after a move.
type fanInCounts struct {
	id                    int64
	expected, ended, done int
	require               Require
	state                 FanInState
}

// moveGroup adds c to fan-in id's counts and to those of the fan-ins
// sharing its members, and returns them all; none if id was purged.
func moveGroup(ctx context.Context, e *Base, tx Tx, id int64, c FanInDelta, now time.Time) ([]fanInCounts, error) {
	f := fanInCounts{id: id}
	err := tx.QueryRow(ctx, e.q.MoveFanIn, c.Ended, c.Done, now, id).Scan(&f.expected, &f.ended, &f.done, &f.require, &f.state)
	if errors.Is(err, ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("count fan-in %d: %w", id, err)
	}
	counts, err := Collect(Read(tx.Query(ctx, e.q.MoveSharers, c.Ended, c.Done, now, id)), func(r Row) (fanInCounts, error) {
		var s fanInCounts
		err := r.Scan(&s.id, &s.expected, &s.ended, &s.done, &s.require, &s.state)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("count fan-ins sharing %d: %w", id, err)
	}
	slices.SortFunc(counts, func(a, b fanInCounts) int { return cmp.Compare(a.id, b.id) })
	return append([]fanInCounts{f}, counts...), nil
}

// decide returns the state a fan-in moves to from state, or "" for none.
func decide(require Require, state FanInState, expected, ended, done int) FanInState {
	if state == FanInFired || ended < expected {
		return ""
	}
	if require == RequireDone && done < expected {
		if state == FanInWaiting {
			return FanInSkipped
		}
		return ""
	}
	return FanInFired
}

// fire enqueues fan-in id's job with its members' outcomes in its payload.
func fire(ctx context.Context, e *Base, tx Tx, id int64, now time.Time) error {
	rec, err := readThen(ctx, e, tx, id)
	if err != nil {
		return err
	}
	then := rec.NewJob
	var payload map[string]any
	if len(then.Payload) > 0 {
		if err := json.Unmarshal(then.Payload, &payload); err != nil {
			return fmt.Errorf("read fan-in %d: %w", id, err)
		}
	}
	if payload == nil {
		payload = map[string]any{}
	}
	lists := map[string][]string{}
	err = Read(tx.Query(ctx, e.q.FanInMembers, id)).Each(func(r Row) (bool, error) {
		var key, item string
		var st State
		if err := r.Scan(&key, &item, &st); err != nil {
			return false, err
		}
		if Terminal(st) {
			lists[string(st)] = append(lists[string(st)], cmp.Or(item, key))
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("read fan-in %d members: %w", id, err)
	}
	for _, st := range []State{StateDone, StateDead, StateCancelled} {
		payload[string(st)] = []string{}
	}
	for st, l := range lists {
		slices.Sort(l)
		payload[st] = l
	}
	if then.Payload, err = json.Marshal(payload); err != nil {
		return err
	}
	jobs, err := PrepareJobs([]NewJob{then}, now)
	if err != nil {
		return fmt.Errorf("fire fan-in %d: %w", id, err)
	}
	res, err := e.b.InsertJobs(ctx, tx, jobs, now)
	if err != nil {
		return fmt.Errorf("fire fan-in %d: %w", id, err)
	}
	if _, err := tx.Exec(ctx, e.q.SetFanInState, string(FanInFired), res[0].ID, now, id); err != nil {
		return fmt.Errorf("fire fan-in %d: %w", id, err)
	}
	if len(rec.Next) > 0 && res[0].Inserted && !res[0].Skipped {
		if _, _, err := InsertFanIns(ctx, e, tx, rec.Next, res, now); err != nil {
			return fmt.Errorf("fire fan-in %d: %w", id, err)
		}
	}
	return nil
}

// skip marks fan-in id skipped and records the skip of its job's instant,
// if it stands for one, or of its manual run (see FanInSpec.Run).
func skip(ctx context.Context, e *Base, tx Tx, id int64, now time.Time) error {
	if _, err := tx.Exec(ctx, e.q.SetFanInState, string(FanInSkipped), nil, now, id); err != nil {
		return fmt.Errorf("skip fan-in %d: %w", id, err)
	}
	var schedule *string
	var item string
	var at, created Time
	if err := tx.QueryRow(ctx, e.q.FanInInstant, id).Scan(&schedule, &item, &at, &created); err != nil {
		return fmt.Errorf("skip fan-in %d: %w", id, err)
	}
	if schedule == nil {
		return nil
	}
	if at.IsZero() {
		rec, err := readThen(ctx, e, tx, id)
		if err != nil || rec.Run == "" {
			return err
		}
		item, at = ManualRunItem(rec.Run), created
	}
	return e.b.InsertSkips(ctx, tx, []Skip{{Schedule: *schedule, Item: item, ScheduledAt: at.Time,
		Reason: SkipUpstreamFailed, RecordedAt: now}}, now)
}

// readThen reads fan-in id's job as it was inserted, with its Next and Run.
func readThen(ctx context.Context, e *Base, tx Tx, id int64) (thenRecord, error) {
	var thenText string
	var rec thenRecord
	if err := tx.QueryRow(ctx, e.q.FanInThen, id).Scan(&thenText); err != nil {
		return rec, fmt.Errorf("read fan-in %d: %w", id, err)
	}
	if err := json.Unmarshal([]byte(thenText), &rec); err != nil {
		return rec, fmt.Errorf("read fan-in %d: %w", id, err)
	}
	return rec, nil
}

// EnqueueFanIn implements Producer.EnqueueFanIn for engines whose
// transactions Base runs.
func (e *Base) EnqueueFanIn(ctx context.Context, f NewFanIn) (FanInEnqueued, error) {
	now := e.clock.Now()
	specs, jobs, err := PrepareNewFanIn(f, now)
	if err != nil {
		return FanInEnqueued{}, err
	}
	var res FanInEnqueued
	fired := false
	err = e.b.InTx(ctx, true, func(tx Tx) error {
		var err error
		res, fired, err = EnqueueFanInTx(ctx, e, tx, specs, jobs, now)
		return err
	})
	if err != nil {
		return FanInEnqueued{}, fmt.Errorf("enqueue fan-in %q: %w", specs[0].Key, err)
	}
	if res.Inserted && (len(res.Jobs) > 0 || fired) {
		Wake(e)
	}
	return res, nil
}

// PrepareNewFanIn checks f and its members and fills their defaults at now.
// It returns f's fan-in and then those of f.Also, which share its members.
func PrepareNewFanIn(f NewFanIn, now time.Time) ([]FanInSpec, []NewJob, error) {
	specs, err := PrepareFanIns(append([]FanInSpec{{Key: f.Key, Then: f.Then, Require: f.Require, Next: f.Next}}, f.Also...), now)
	if err != nil {
		return nil, nil, err
	}
	jobs, err := PrepareJobs(f.Jobs, now)
	if err != nil {
		return nil, nil, fmt.Errorf("fan-in %q: %w", specs[0].Key, err)
	}
	return specs, jobs, nil
}

// EnqueueFanInTx inserts the prepared fan-ins specs (see InsertFanIns) and
// their members jobs in tx: nothing if a fan-in of the first's key exists.
// fired reports that they had no member and enqueued their jobs at once.
func EnqueueFanInTx(ctx context.Context, e *Base, tx Tx, specs []FanInSpec, jobs []NewJob, now time.Time) (res FanInEnqueued, fired bool, err error) {
	id, inserted, err := insertFanInRow(ctx, e, tx, specs[0], nil, now)
	res = FanInEnqueued{ID: id, Key: specs[0].Key, Inserted: inserted}
	if err != nil || !inserted {
		return res, false, err
	}
	for _, s := range specs[1:] {
		if _, _, err := insertFanInRow(ctx, e, tx, s, &id, now); err != nil {
			return res, false, err
		}
	}
	if res.Jobs, err = e.b.InsertJobs(ctx, tx, jobs, now); err != nil {
		return res, false, err
	}
	return res, len(jobs) == 0 || !anyAdopted(res.Jobs), adoptMembers(ctx, e, tx, id, res.Jobs, now)
}

func anyAdopted(res []Enqueued) bool {
	for _, r := range res {
		if r.Inserted && !r.Skipped {
			return true
		}
	}
	return false
}

// FanInColumns are the columns of a FanIn, as ScanFanIn reads them.
const FanInColumns = `id, key, require, state, expected, ended, done, coalesce(job_id, 0), type, schedule, item,
scheduled_at, created_at, updated_at`

// ScanFanIn reads a row of FanInColumns.
func ScanFanIn(r Row) (FanIn, error) {
	var f FanIn
	var schedule *string
	var at, created, updated Time
	err := r.Scan(&f.ID, &f.Key, &f.Require, &f.State, &f.Expected, &f.Ended, &f.Done, &f.JobID, &f.Type,
		&schedule, &f.Item, &at, &created, &updated)
	if schedule != nil {
		f.Schedule = *schedule
	}
	f.ScheduledAt, f.CreatedAt, f.UpdatedAt = at.Time, created.Time, updated.Time
	return f, err
}

// FanIn implements ScheduleViews.FanIn.
func (e *Base) FanIn(ctx context.Context, key string) (FanIn, error) {
	if e.q.FanInByKey == "" {
		return FanIn{}, fmt.Errorf("fan-in %q: %w", key, ErrNotFound)
	}
	f, err := ScanFanIn(e.b.Reader().QueryRow(ctx, e.q.FanInByKey, key))
	if errors.Is(err, ErrNoRows) {
		return FanIn{}, fmt.Errorf("fan-in %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return FanIn{}, fmt.Errorf("fan-in %q: %w", key, err)
	}
	return f, nil
}

// FanInJobs implements ScheduleViews.FanInJobs.
func (e *Base) FanInJobs(ctx context.Context, key string, limit int) ([]*Job, error) {
	if e.q.FanInJobs == "" {
		return nil, nil
	}
	js, err := e.jobs(ctx, e.q.FanInJobs, key, alarmRows(limit))
	if err != nil {
		return nil, fmt.Errorf("jobs of fan-in %q: %w", key, err)
	}
	return js, nil
}

// FanInsOf implements ScheduleViews.FanInsOf.
func (e *Base) FanInsOf(ctx context.Context, schedule string, limit int) ([]FanIn, error) {
	if e.q.FanInsOf == "" {
		return nil, nil
	}
	fs, err := Collect(Read(e.b.Reader().Query(ctx, e.q.FanInsOf, schedule, limit)), ScanFanIn)
	if err != nil {
		return nil, fmt.Errorf("fan-ins of %s: %w", schedule, err)
	}
	return fs, nil
}
