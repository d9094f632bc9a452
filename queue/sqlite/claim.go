package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// claimColumns are what a claim returns; scanClaimed fills in the rest from
// what it wrote.
const claimColumns = `id, key, type, payload, attempt, max_attempts, priority, run_at, schedule, item,
scheduled_at, last_error, created_at, version, retried_at, alarm_key, fanin_id, trace`

// claimSQL takes up to N ready jobs in claim order, of version 1 of the JSON
// array of types (handled, unlimited), in one statement, under the write
// lock. It walks jobs_ready in claim order and stops after LIMIT rows;
// without INDEXED BY the planner may sort every ready job, slow in a backlog.
// N is in the text (claimQuery): a bound LIMIT makes SQLite recompile at
// every bind.
const claimSQL = claimPrefix + ` owner = ?1, lease_until = ?2, started_at = ?3, finished_at = NULL
WHERE id IN (
	SELECT id` + claimableJobs + `
)
RETURNING ` + claimColumns

// claimVersionsSQL is claimSQL for a pool taking other versions.
const claimVersionsSQL = claimPrefix + ` owner = ?1, lease_until = ?2, started_at = ?3, finished_at = NULL
WHERE id IN (
	SELECT id` + claimableVersions + `
)
RETURNING ` + claimColumns

// claimableJobs is what claimSQL takes, shared with claimWindowSQL: ?3 is
// now, ?4 the types; other jobs stay pending. The type list is read once per
// statement into an ephemeral index; ready jobs no handler here takes, at the
// head of the claim order, are walked past at each claim (README, "Jobs whose
// task the daemon does not know"). It serves pools running only version 1,
// the common case, with no second list to test.
const claimableJobs = ` FROM jobs INDEXED BY jobs_ready
	WHERE state = 'pending' AND run_at <= ?3 AND type IN (SELECT value FROM json_each(?4)) AND version = 1
	ORDER BY priority DESC, run_at, id
	LIMIT N`

// claimableVersions is claimableJobs for a pool taking other versions: ?4 the
// types at version 1, ?5 a JSON array of [type, version] pairs, looked up
// only for a job of another version.
const claimableVersions = ` FROM jobs INDEXED BY jobs_ready
	WHERE state = 'pending' AND run_at <= ?3
		AND (version = 1 AND type IN (SELECT value FROM json_each(?4))
			OR version <> 1 AND (type, version) IN (SELECT value->>0, value->>1 FROM json_each(?5)))
	ORDER BY priority DESC, run_at, id
	LIMIT N`

// claimQuery returns a claim's text for a limit of n, each distinct text
// prepared once and cached.
func claimQuery(base string, n int) string {
	return strings.Replace(base, "LIMIT N", "LIMIT "+strconv.Itoa(n), 1)
}

// claimWindowSQL reads, in claim order, whether each of the next N jobs
// claimSQL would take is on its last attempt.
const (
	claimWindowSQL         = claimWindowPrefix + claimableJobs
	claimWindowVersionsSQL = claimWindowPrefix + claimableVersions
)

const claimWindowPrefix = "SELECT attempt + 1 >= max_attempts"

// unclaimSQL gives claimed jobs back as they were.
const unclaimSQL = `UPDATE jobs SET state = 'pending', owner = NULL, lease_until = NULL, attempt = attempt - 1
WHERE id IN (SELECT value FROM json_each(?1)) AND owner = ?2 AND state = 'running'
RETURNING type`

// claimer runs one transaction's claims (store.Claimer) for owner at now,
// leased until until.
type claimer struct {
	tx         txn
	s          *Store
	owner      string
	now, until time.Time
}

var _ store.Claimer = claimer{}

// ClaimReady implements store.Claimer.ClaimReady.
func (c claimer) ClaimReady(ctx context.Context, types []string, versions store.Versions, n int) ([]*store.Job, error) {
	plain, pairs := versions.Split(types)
	q, args := claimSQL, []any{c.owner, ms(c.until), ms(c.now), c.s.types.json(plain)}
	if len(pairs) > 0 {
		q, args = claimVersionsSQL, append(args, pairsJSON(pairs))
	}
	return c.scan(c.tx.query(ctx, claimQuery(q, n), args...))
}

// LastAttempts implements store.Claimer.LastAttempts.
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

// Unclaim implements store.Claimer.Unclaim.
func (c claimer) Unclaim(ctx context.Context, jobs []*store.Job) error {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	_, err := store.MoveTypes(store.Read(wrap(c.tx.query(ctx, unclaimSQL, idsText(ids), c.owner))), c.tx.counts, store.StateRunning, store.StatePending)
	return err
}

// scan reads a claim's rows as running jobs and counts them.
func (c claimer) scan(rows *sql.Rows, err error) ([]*store.Job, error) {
	return store.Collect(store.Read(wrap(rows, err)), func(r store.Row) (*store.Job, error) {
		j, err := scanClaimed(r, c.owner, c.until, c.now)
		if err == nil {
			c.tx.counts.Move(j.Type, store.StatePending, store.StateRunning, 1)
		}
		return j, err
	})
}

// scanClaimed reads claimColumns as the job the claim made running. The
// columns are scanned as the driver's values and converted here: a scan into
// typed destinations converts most of them by reflection, per column of
// every claimed job.
func scanClaimed(r store.Row, owner string, until, now time.Time) (*store.Job, error) {
	var v [claimColumnCount]any
	var dest [claimColumnCount]any
	for i := range v {
		dest[i] = &v[i]
	}
	if err := r.Scan(dest[:]...); err != nil {
		return nil, err
	}
	var c claimedValues
	j := &store.Job{
		ID: c.int(v[0]), Key: c.text(v[1]), Type: c.text(v[2]), Payload: json.RawMessage(c.text(v[3])),
		State: store.StateRunning, Attempt: int(c.int(v[4])), MaxAttempts: int(c.int(v[5])), Priority: int(c.int(v[6])),
		RunAt: c.instant(v[7]), Schedule: c.text(v[8]), Item: c.text(v[9]), ScheduledAt: c.instant(v[10]),
		LastError: c.text(v[11]), CreatedAt: c.instant(v[12]), Version: int(c.int(v[13])), RetriedAt: c.instant(v[14]),
		AlarmKey: c.text(v[15]), FanInID: c.int(v[16]), Trace: c.text(v[17]),
		Owner: owner, LeaseUntil: time.UnixMilli(ms(until)).UTC(), StartedAt: time.UnixMilli(ms(now)).UTC(),
	}
	return j, c.err
}

// claimColumnCount is how many columns claimColumns names.
const claimColumnCount = 18

// claimedValues converts a claimed row's values, keeping the first error.
// NULL reads as the zero value, as the nullable columns are read elsewhere.
type claimedValues struct{ err error }

func (c *claimedValues) int(v any) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case nil:
		return 0
	}
	c.fail(v)
	return 0
}

func (c *claimedValues) text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case nil:
		return ""
	}
	c.fail(v)
	return ""
}

func (c *claimedValues) instant(v any) time.Time {
	if v == nil {
		return time.Time{}
	}
	return time.UnixMilli(c.int(v)).UTC()
}

func (c *claimedValues) fail(v any) {
	if c.err == nil {
		c.err = fmt.Errorf("claimed job: unexpected value %T", v)
	}
}

// versionsJSON returns versions as a JSON array, [1] as a constant.
func versionsJSON(versions []int) string {
	if len(versions) == 1 && versions[0] == 1 {
		return "[1]"
	}
	return jsonText(versions)
}

func pairsJSON(pairs []store.TypeVersion) string {
	arr := make([][2]any, len(pairs))
	for i, p := range pairs {
		arr[i] = [2]any{p.Type, p.Version}
	}
	return jsonText(arr)
}
