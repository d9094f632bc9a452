package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// claimSQL takes up to $4 ready jobs in claim order, of version 1 of types
// $5; claimVersionsSQL also of the (type, version) pairs $6, $7, looked up
// only for other versions. It walks jobs_ready skipping rows other
// transactions hold (SKIP LOCKED), so pools claiming at once take the next
// jobs, never the same. Other jobs stay pending.
var (
	claimSQL         = claimOf(false)
	claimVersionsSQL = claimOf(true)
)

func claimOf(versions bool) string {
	return `WITH c AS (
	SELECT id FROM jobs
	WHERE state = 'pending' AND run_at <= $3 AND ` + acceptedJobs(5, versions) + `
	ORDER BY priority DESC, run_at, id
	LIMIT $4
	FOR UPDATE SKIP LOCKED
)
UPDATE jobs SET state = 'running', attempt = attempt + 1, owner = $1, lease_until = $2, started_at = $3, finished_at = NULL
FROM c WHERE jobs.id = c.id
RETURNING ` + jobColumnsOf + `, jobs.fanin_id, jobs.trace`
}

// acceptedJobs returns the filter of the jobs a pool takes, shared by the
// claims, nextWakeSQL and waitingSQL: version 1 of types $first and, with
// versions, the pairs $first+1, $first+2.
func acceptedJobs(first int, versions bool) string {
	if !versions {
		return fmt.Sprintf(`type = ANY($%d) AND version = 1`, first)
	}
	return fmt.Sprintf(`(version = 1 AND type = ANY($%d)
		OR version <> 1 AND (type, version) IN (SELECT * FROM unnest($%d::text[], $%d::int[])))`, first, first+1, first+2)
}

// acceptedArgs returns acceptedJobs's arguments, and whether its filter takes
// versions (only with pairs).
func acceptedArgs(plain []string, pairs []store.TypeVersion) (args []any, versions bool) {
	if plain == nil {
		plain = []string{}
	}
	if len(pairs) == 0 {
		return []any{plain}, false
	}
	types, vs := make([]string, len(pairs)), make([]int32, len(pairs))
	for i, p := range pairs {
		types[i], vs[i] = p.Type, int32(p.Version)
	}
	return []any{plain, types, vs}, true
}

// claimPlanSQL keeps the planner, for the transaction, on the claim's plan:
// walk jobs_ready and stop. On a table not analysed since a burst of enqueues
// it would read and sort every pending job at each claim, so a drain would
// read rows growing with the square of the backlog.
const claimPlanSQL = `SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true)`

// claimWindowSQL reads, in claim order, whether each of the next $2 jobs
// claimSQL would take is on its last attempt.
var (
	claimWindowSQL         = claimWindowOf(false)
	claimWindowVersionsSQL = claimWindowOf(true)
)

func claimWindowOf(versions bool) string {
	return `SELECT attempt + 1 >= max_attempts FROM jobs
WHERE state = 'pending' AND run_at <= $1 AND ` + acceptedJobs(3, versions) + `
ORDER BY priority DESC, run_at, id
LIMIT $2`
}

// unclaimSQL gives claimed jobs back as they were.
const unclaimSQL = `UPDATE jobs SET state = 'pending', owner = NULL, lease_until = NULL, attempt = attempt - 1
WHERE id = ANY($1) AND owner = $2 AND state = 'running'
RETURNING type`

// claimer runs one transaction's claims (store.Claimer), the first setting
// claimPlanSQL.
type claimer struct {
	tx         querier
	counts     store.CountDeltas
	owner      string
	now, until time.Time
	planned    *bool
}

var _ store.Claimer = claimer{}

func newClaimer(tx querier, counts store.CountDeltas, owner string, now time.Time, lease time.Duration) claimer {
	return claimer{tx: tx, counts: counts, owner: owner, now: now, until: ts(now.Add(lease)), planned: new(bool)}
}

func (c claimer) plan(ctx context.Context) error {
	if *c.planned {
		return nil
	}
	*c.planned = true
	_, err := c.tx.Exec(ctx, claimPlanSQL)
	return err
}

func (c claimer) ClaimReady(ctx context.Context, types []string, versions store.Versions, n int) ([]*store.Job, error) {
	if err := c.plan(ctx); err != nil {
		return nil, err
	}
	accepted, withVersions := acceptedArgs(versions.Split(types))
	q := claimSQL
	if withVersions {
		q = claimVersionsSQL
	}
	rows, err := c.tx.Query(ctx, q, append([]any{c.owner, c.until, c.now, n}, accepted...)...)
	return collectClaimed(c.counts, rows, err)
}

func (c claimer) LastAttempts(ctx context.Context, types []string, versions store.Versions, n int) ([]bool, error) {
	if err := c.plan(ctx); err != nil {
		return nil, err
	}
	accepted, withVersions := acceptedArgs(versions.Split(types))
	q := claimWindowSQL
	if withVersions {
		q = claimWindowVersionsSQL
	}
	rows, err := c.tx.Query(ctx, q, append([]any{c.now, n}, accepted...)...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[bool])
}

func (c claimer) Unclaim(ctx context.Context, jobs []*store.Job) error {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	_, err := store.MoveTypes(store.Read(txn{q: c.tx}.Query(ctx, unclaimSQL, ids, c.owner)), c.counts, store.StateRunning, store.StatePending)
	return err
}

// collectClaimed reads a claim's rows, counting them as running.
func collectClaimed(d store.CountDeltas, rows pgx.Rows, err error) ([]*store.Job, error) {
	return store.Collect(store.Read(rows, err), func(r store.Row) (*store.Job, error) {
		j, err := store.ScanClaimedJob(r)
		if err == nil {
			d.Move(j.Type, store.StatePending, store.StateRunning, 1)
		}
		return j, err
	})
}
