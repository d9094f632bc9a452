package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// claimColumns are the columns a claim returns: those it does not set
// itself, which scanClaimed fills from what the claim wrote.
const claimColumns = `id, key, type, payload, attempt, max_attempts, priority, run_at, schedule, item,
scheduled_at, last_error, created_at, version, retried_at, alarm_key`

// claimSQL takes up to N ready jobs in claim order, of version 1 of the
// types in a JSON array (those the pool has a handler for and runs without
// a limit), in one statement: no other connection can take the same rows,
// since the write lock is held from the SELECT to the UPDATE. It walks
// jobs_ready, whose order is the claim order, and stops after LIMIT rows;
// without INDEXED BY the planner may pick jobs_pending_run_at and sort every
// ready job, which is slow when a backlog has built up. N is written into the
// text (see claimQuery): a bound LIMIT makes SQLite recompile the statement
// at every bind.
const claimSQL = claimPrefix + ` owner = ?1, lease_until = ?2, started_at = ?3, finished_at = NULL
WHERE id IN (
	SELECT id` + claimableJobs + `
)
RETURNING ` + claimColumns

// claimVersionsSQL is claimSQL for a pool that takes other versions than 1
// of some type (see claimableVersions).
const claimVersionsSQL = claimPrefix + ` owner = ?1, lease_until = ?2, started_at = ?3, finished_at = NULL
WHERE id IN (
	SELECT id` + claimableVersions + `
)
RETURNING ` + claimColumns

// claimableJobs is what claimSQL takes, shared with claimWindowSQL, which
// looks at the same rows first: ?3 is now, ?4 the types to take. A job of
// another type, or of another version than 1, is passed over and stays
// pending: no handler here, or a type with a concurrency limit, claimed on
// its own, or a version for a pool that accepts it. The type list is
// read once per statement into an ephemeral index, so filtering costs one
// lookup per row walked; ready jobs that no handler here can take, at the
// head of the claim order, are walked past at each claim (see README,
// "Jobs whose task the daemon does not know").
//
// This is the claim of every pool that runs version 1 alone of each type,
// the common case: the version is one more column of the row that the
// walk of jobs_ready already reads for the type, and the plan is the walk
// by type alone. A pool that takes other versions has
// claimableVersions, a statement of its own, so that this one does not
// carry a second list to read and test for nothing.
const claimableJobs = ` FROM jobs INDEXED BY jobs_ready
	WHERE state = 'pending' AND run_at <= ?3 AND type IN (SELECT value FROM json_each(?4)) AND version = 1
	ORDER BY priority DESC, run_at, id
	LIMIT N`

// claimableVersions is claimableJobs for a pool that takes other versions
// than 1 of some type: ?4 holds the types whose jobs of version 1 it takes,
// ?5 the (type, version) pairs of the other versions it takes, as a JSON
// array of [type, version]. The pairs are only looked up for a job of
// another version than 1.
const claimableVersions = ` FROM jobs INDEXED BY jobs_ready
	WHERE state = 'pending' AND run_at <= ?3
		AND (version = 1 AND type IN (SELECT value FROM json_each(?4))
			OR version <> 1 AND (type, version) IN (SELECT value->>0, value->>1 FROM json_each(?5)))
	ORDER BY priority DESC, run_at, id
	LIMIT N`

// claimQuery returns the text of a claim for a limit of n.
// Each distinct text is prepared once and cached (see txn).
func claimQuery(base string, n int) string {
	return strings.Replace(base, "LIMIT N", "LIMIT "+strconv.Itoa(n), 1)
}

// claimWindowSQL reads, in claim order, whether each of the next N jobs
// claimSQL would take is on its last attempt; claimWindowVersionsSQL the
// same of claimVersionsSQL.
const (
	claimWindowSQL         = claimWindowPrefix + claimableJobs
	claimWindowVersionsSQL = claimWindowPrefix + claimableVersions
)

const claimWindowPrefix = "SELECT attempt + 1 >= max_attempts"

// unclaimSQL gives claimed jobs back as they were: same place in the claim
// order, attempt not spent.
const unclaimSQL = `UPDATE jobs SET state = 'pending', owner = NULL, lease_until = NULL, attempt = attempt - 1
WHERE id IN (SELECT value FROM json_each(?1)) AND owner = ?2 AND state = 'running'
RETURNING type`

// claimer runs the claims of one transaction (see store.Claimer), for
// owner at now, leased until until.
type claimer struct {
	tx         txn
	s          *Store
	owner      string
	now, until time.Time
}

var _ store.Claimer = claimer{}

// ClaimReady claims up to n ready jobs of types at their versions: the
// common case, types whose version 1 alone the pool takes, by claimSQL.
func (c claimer) ClaimReady(ctx context.Context, types []string, versions store.Versions, n int) ([]*store.Job, error) {
	plain, pairs := versions.Split(types)
	q, args := claimSQL, []any{c.owner, ms(c.until), ms(c.now), c.s.types.json(plain)}
	if len(pairs) > 0 {
		q, args = claimVersionsSQL, append(args, pairsJSON(pairs))
	}
	return c.scan(c.tx.query(ctx, claimQuery(q, n), args...))
}

// LastAttempts reads whether each of the next n jobs ClaimReady would take
// is on its last attempt.
func (c claimer) LastAttempts(ctx context.Context, types []string, versions store.Versions, n int) ([]bool, error) {
	plain, pairs := versions.Split(types)
	// ?1 and ?2 are claimSQL's owner and lease, unused here.
	q, args := claimWindowSQL, []any{nil, nil, ms(c.now), c.s.types.json(plain)}
	if len(pairs) > 0 {
		q, args = claimWindowVersionsSQL, append(args, pairsJSON(pairs))
	}
	return store.Collect(store.Read(wrap(c.tx.query(ctx, claimQuery(q, n), args...))), func(r store.Row) (bool, error) {
		var last bool
		err := r.Scan(&last)
		return last, err
	})
}

// Unclaim gives jobs back by unclaimSQL.
func (c claimer) Unclaim(ctx context.Context, jobs []*store.Job) error {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	_, err := store.MoveTypes(store.Read(wrap(c.tx.query(ctx, unclaimSQL, idsText(ids), c.owner))), c.tx.counts, store.StateRunning, store.StatePending)
	return err
}

// scan reads the rows of a claim as the running jobs it made of them, and
// counts them.
func (c claimer) scan(rows *sql.Rows, err error) ([]*store.Job, error) {
	return store.Collect(store.Read(wrap(rows, err)), func(r store.Row) (*store.Job, error) {
		j, err := scanClaimed(r, c.owner, c.until, c.now)
		if err == nil {
			c.tx.counts.Move(j.Type, store.StatePending, store.StateRunning, 1)
		}
		return j, err
	})
}

// scanClaimed reads a row of claimColumns as the running job that the claim
// by owner at now, leased until until, made of it.
func scanClaimed(r store.Row, owner string, until, now time.Time) (*store.Job, error) {
	var j store.Job
	var payload string
	var runAt, createdAt int64
	var schedule, alarmKey sql.NullString
	var scheduledAt, retriedAt store.Time
	if err := r.Scan(&j.ID, &j.Key, &j.Type, &payload, &j.Attempt, &j.MaxAttempts, &j.Priority,
		&runAt, &schedule, &j.Item, &scheduledAt, &j.LastError, &createdAt, &j.Version, &retriedAt, &alarmKey); err != nil {
		return nil, err
	}
	j.Payload = json.RawMessage(payload)
	j.State = store.StateRunning
	j.RunAt = time.UnixMilli(runAt).UTC()
	j.Schedule = schedule.String
	j.ScheduledAt = scheduledAt.Time
	j.LeaseUntil = time.UnixMilli(ms(until)).UTC()
	j.Owner = owner
	j.CreatedAt = time.UnixMilli(createdAt).UTC()
	j.StartedAt = time.UnixMilli(ms(now)).UTC()
	j.RetriedAt = retriedAt.Time
	j.AlarmKey = alarmKey.String
	return &j, nil
}

// versionsJSON returns versions as a JSON array. [1], the common case, is
// a constant.
func versionsJSON(versions []int) string {
	if len(versions) == 1 && versions[0] == 1 {
		return "[1]"
	}
	return jsonText(versions)
}

// pairsJSON returns pairs as a JSON array of [type, version]: "[]" for
// none, the common case.
func pairsJSON(pairs []store.TypeVersion) string {
	arr := make([][2]any, len(pairs))
	for i, p := range pairs {
		arr[i] = [2]any{p.Type, p.Version}
	}
	return jsonText(arr)
}
