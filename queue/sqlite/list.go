package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// List returns the jobs f selects, newest (highest id) first. A list of one
// state walks that state's partial index, a list of all jobs the ids, and a
// key prefix the unique key index; each stops at the limit, so it never
// counts or sorts the whole table. A filter by type or schedule keeps the
// matches among the newest ListScanBound jobs of that walk (below BeforeID,
// for a later page).
func (s *Store) List(ctx context.Context, f store.Filter) ([]*store.Job, error) {
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Limit < 0 || f.Limit > store.MaxList {
		return nil, fmt.Errorf("list jobs: limit %d: want 1 to %d", f.Limit, store.MaxList)
	}
	if f.State != "" && !validState(f.State) {
		return nil, fmt.Errorf("list jobs: unknown state %q", f.State)
	}
	query, args := listQuery(f)
	js, err := s.jobs(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return js, nil
}

// stateTerm is List's condition for each state. Done jobs are most of the
// table and lie dense among the newest ids: walking the ids backwards finds
// a page of them at once, so the term hides the column from the planner
// (+state), which would otherwise sort every done job by id.
var stateTerm = map[store.State]string{
	store.StatePending:   "state = 'pending'",
	store.StateRunning:   "state = 'running'",
	store.StateDone:      "+state = 'done'",
	store.StateDead:      "state = 'dead'",
	store.StateCancelled: "state = 'cancelled'",
}

// stateIndex is the partial index a list of pending or running jobs reads:
// those jobs are few among many done ones, which a walk of the ids would
// pass over one by one. The planner, without statistics, prefers the walk.
var stateIndex = map[store.State]string{
	store.StatePending: "jobs_ready",
	store.StateRunning: "jobs_lease",
}

func validState(s store.State) bool {
	switch s {
	case store.StatePending, store.StateRunning, store.StateDone, store.StateDead, store.StateCancelled:
		return true
	}
	return false
}

// listQuery builds List's query. The conditions are fixed texts with ?
// placeholders; only which of them appear varies.
func listQuery(f store.Filter) (string, []any) {
	var where []string
	var args []any
	if f.State != "" {
		// The state as a literal (List checked it is one of five), so that
		// the planner may use the partial index of that state.
		where = append(where, stateTerm[f.State])
	}
	if f.Type != "" {
		where, args = append(where, "type = ?"), append(args, f.Type)
	}
	if f.Schedule != "" {
		where, args = append(where, "schedule = ?"), append(args, f.Schedule)
	}
	if f.KeyPrefix != "" {
		// A range on the key's unique index (not LIKE, whose wildcards and
		// case folding a key may contain). Text compares by bytes, and no
		// UTF-8 text continues a prefix with bytes above U+10FFFF's.
		where = append(where, "key >= ? AND key < ?")
		args = append(args, f.KeyPrefix, f.KeyPrefix+"\U0010FFFF")
	}
	if (f.Type != "" || f.Schedule != "") && f.KeyPrefix == "" {
		// The newest ListScanBound jobs of the walk a list of the state
		// alone would make, then the type and schedule among them.
		inner, innerArgs := stateOnly(f.State, f.BeforeID)
		return `SELECT ` + jobColumns + ` FROM (` + inner + ` ORDER BY id DESC LIMIT ?) WHERE ` +
				strings.Join(where[min(len(where), stateTerms(f)):], " AND ") + ` ORDER BY id DESC LIMIT ?`,
			append(append(append(innerArgs, store.ListScanBound), args...), f.Limit)
	}
	if f.BeforeID > 0 {
		where, args = append(where, "id < ?"), append(args, f.BeforeID)
	}
	query := `SELECT ` + jobColumns + ` FROM jobs`
	if ix := stateIndex[f.State]; ix != "" && f.KeyPrefix == "" {
		query += ` INDEXED BY ` + ix
	}
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	return query + ` ORDER BY id DESC LIMIT ?`, append(args, f.Limit)
}

// stateOnly is the walk of a list of state alone (every job when state is
// empty), below the id before when it is not zero, without its ORDER BY
// and LIMIT.
func stateOnly(state store.State, before int64) (string, []any) {
	query := `SELECT ` + jobColumns + ` FROM jobs`
	if ix := stateIndex[state]; ix != "" {
		query += ` INDEXED BY ` + ix
	}
	var where []string
	var args []any
	if state != "" {
		where = append(where, stateTerm[state])
	}
	if before > 0 {
		where, args = append(where, "id < ?"), append(args, before)
	}
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	return query, args
}

// stateTerms is how many of listQuery's conditions are the state's: the
// first, if f has one.
func stateTerms(f store.Filter) int {
	if f.State != "" {
		return 1
	}
	return 0
}

const skipsAllSQL = `SELECT schedule, item, scheduled_at, reason, recorded_at FROM skips
ORDER BY scheduled_at DESC, schedule DESC, item DESC LIMIT ?`

const skipsOfSQL = `SELECT schedule, item, scheduled_at, reason, recorded_at FROM skips
WHERE schedule = ? ORDER BY scheduled_at DESC, item DESC LIMIT ?`

// ListSkips returns up to limit (1 to MaxList) skipped instants, newest
// instant first: of schedule, or of every schedule when it is empty.
func (s *Store) ListSkips(ctx context.Context, schedule string, limit int) ([]store.Skip, error) {
	if err := store.CheckLimit("list skips", limit); err != nil {
		return nil, err
	}
	query, args := skipsAllSQL, []any{limit}
	if schedule != "" {
		query, args = skipsOfSQL, []any{schedule, limit}
	}
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list skips: %w", err)
	}
	defer rows.Close()
	var out []store.Skip
	for rows.Next() {
		sk, err := scanSkip(rows)
		if err != nil {
			return nil, fmt.Errorf("list skips: %w", err)
		}
		out = append(out, sk)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list skips: %w", err)
	}
	return out, nil
}

func scanSkip(r scanner) (store.Skip, error) {
	var s store.Skip
	var at, rec int64
	if err := r.Scan(&s.Schedule, &s.Item, &at, &s.Reason, &rec); err != nil {
		return s, err
	}
	s.ScheduledAt, s.RecordedAt = time.UnixMilli(at).UTC(), time.UnixMilli(rec).UTC()
	return s, nil
}

const skipCountSQL = `SELECT count(*) FROM (SELECT 1 FROM skips
WHERE schedule = ? AND scheduled_at > ? LIMIT ?)`

const lastSkipSQL = `SELECT schedule, item, scheduled_at, reason, recorded_at FROM skips
WHERE schedule = ? ORDER BY scheduled_at DESC LIMIT 1`

// SkipSummary counts the skips of schedule's instants after since and
// returns its newest skip. Both are bounded reads of one index.
func (s *Store) SkipSummary(ctx context.Context, schedule string, since time.Time) (store.SkipSummary, error) {
	var sum store.SkipSummary
	if err := s.r.QueryRowContext(ctx, skipCountSQL, schedule, ms(since), store.MaxSkipCount).Scan(&sum.Count); err != nil {
		return sum, fmt.Errorf("skips of %s: %w", schedule, err)
	}
	last, err := scanSkip(s.r.QueryRowContext(ctx, lastSkipSQL, schedule))
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return sum, fmt.Errorf("skips of %s: %w", schedule, err)
	default:
		sum.Last = &last
	}
	return sum, nil
}

const skipAtSQL = `SELECT schedule, item, scheduled_at, reason, recorded_at FROM skips
WHERE schedule = ? AND item IN (?, '') AND scheduled_at = ? ORDER BY item DESC LIMIT 1`

// SkipAt returns the skip of schedule's item at the instant at: one of that
// item, or one of the whole schedule (item ""). It returns ErrNotFound when
// the instant was not skipped, or its record was purged.
func (s *Store) SkipAt(ctx context.Context, schedule, item string, at time.Time) (store.Skip, error) {
	sk, err := scanSkip(s.r.QueryRowContext(ctx, skipAtSQL, schedule, item, ms(at)))
	if errors.Is(err, sql.ErrNoRows) {
		return sk, fmt.Errorf("skip of %sk %sk at %s: %w", schedule, item, at.UTC().Format(time.RFC3339), store.ErrNotFound)
	}
	if err != nil {
		return sk, fmt.Errorf("skip of %sk %sk at %s: %w", schedule, item, at.UTC().Format(time.RFC3339), err)
	}
	return sk, nil
}

const instantStatesSQL = `SELECT state, count(*) FROM jobs
WHERE schedule = ? AND scheduled_at = ? GROUP BY state`

// Instant returns how the jobs of schedule's instant at stand: one range of
// jobs_schedule_at, as long as the schedule's fan-out.
func (s *Store) Instant(ctx context.Context, schedule string, at time.Time) (store.InstantOutcome, error) {
	o := store.InstantOutcome{Schedule: schedule, ScheduledAt: at, States: map[store.State]int{}}
	if err := s.countStates(ctx, &o, instantStatesSQL, schedule, ms(at)); err != nil {
		return o, fmt.Errorf("instant of %s: %w", schedule, err)
	}
	return o, nil
}

// countStates adds the (state, count) rows of query to o.
func (s *Store) countStates(ctx context.Context, o *store.InstantOutcome, query string, args ...any) error {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var st store.State
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return err
		}
		o.States[st] = n
		o.Jobs += n
	}
	return rows.Err()
}

// runStatesSQL walks jobs_schedule_at, whose entries of one schedule's
// manual runs (scheduled_at NULL) are in id order, down from lastID, and
// stops at the span-th job with the run's key suffix.
const runStatesSQL = `SELECT state, count(*) FROM (
	SELECT state FROM jobs
	WHERE schedule = ?1 AND scheduled_at IS NULL AND id <= ?2 AND substr(key, -length(?4)) = ?4
	ORDER BY id DESC LIMIT ?3)
GROUP BY state`

// ManualRun returns how the jobs of one manual run stand: the newest span jobs
// of schedule that stand for no instant, have an id up to lastID and a key
// ending with keySuffix. Other jobs may have ids among the run's (another
// writer's, or the run's own enqueued in several transactions), so the
// read is not one range of ids.
func (s *Store) ManualRun(ctx context.Context, schedule string, lastID int64, span int, keySuffix string) (store.InstantOutcome, error) {
	o := store.InstantOutcome{Schedule: schedule, States: map[store.State]int{}}
	if keySuffix == "" {
		return o, fmt.Errorf("run of %s: empty key suffix", schedule)
	}
	if err := s.countStates(ctx, &o, runStatesSQL, schedule, lastID, max(span, 1), keySuffix); err != nil {
		return o, fmt.Errorf("run of %s: %w", schedule, err)
	}
	return o, nil
}
