package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// claimSQL takes up to $4 ready jobs in claim order: of version 1 of the
// types $5, or of the (type, version) pairs given as the arrays $6 and $7.
// It walks jobs_ready, whose order is the claim order, and passes over the
// rows other transactions hold (SKIP LOCKED): pools on other nodes claiming
// at the same moment take the next jobs instead of waiting for each other,
// and never the same. A job of a version the pool does not accept is
// passed over and stays pending, as one of a type it has no handler for.
//
// A pool that runs version 1 alone of each type, the common case, claims
// with claimSQL, whose filter is the type list and version = 1: the
// version is one more column of the row that the walk of jobs_ready
// already fetches for the type. A pool that takes other versions of some
// type claims with claimVersionsSQL, whose filter adds the (type, version)
// pairs, only looked up (a hashed subplan) for a job of another version
// than 1.
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
RETURNING ` + jobColumnsOf
}

// acceptedJobs returns claimSQL's filter of the jobs a pool takes by type
// and version, shared with claimWindowSQL, nextWakeSQL and waitingSQL:
// version 1 of the types $first and, with versions, the pairs of the
// arrays $first+1 and $first+2 (see acceptedArgs).
func acceptedJobs(first int, versions bool) string {
	if !versions {
		return fmt.Sprintf(`type = ANY($%d) AND version = 1`, first)
	}
	return fmt.Sprintf(`(version = 1 AND type = ANY($%d)
		OR version <> 1 AND (type, version) IN (SELECT * FROM unnest($%d::text[], $%d::int[])))`, first, first+1, first+2)
}

// acceptedArgs returns the arguments of acceptedJobs's filter for the
// types plain at version 1 and pairs, and whether that filter is the one
// with versions: without pairs, the common case, it is not.
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

// claimPlanSQL keeps the planner, for the rest of the transaction, on the
// plan the claim is written for: walk jobs_ready in its order and stop
// after the rows it takes. Without it, on a jobs table that has not been
// analysed since a burst of enqueues, the planner, which then knows
// nothing of the order of the rows on disk, prices the index walk's heap
// fetches as random reads and prefers to read every pending job (a bitmap
// scan) and sort them, at each claim: a drain then reads a number of rows
// that grows with the square of the backlog. Both settings only price the
// other plans out; they forbid nothing, and last until the transaction
// ends (set_config's is_local).
const claimPlanSQL = `SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true)`

// claimWindowSQL reads, in claim order, whether each of the next $2 jobs
// claimSQL would take is on its last attempt; claimWindowVersionsSQL the
// same of claimVersionsSQL.
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

// unclaimSQL gives claimed jobs back as they were: same place in the claim
// order, attempt not spent.
const unclaimSQL = `UPDATE jobs SET state = 'pending', owner = NULL, lease_until = NULL, attempt = attempt - 1
WHERE id = ANY($1) AND owner = $2 AND state = 'running'
RETURNING type`

// claimer runs the claims of one transaction (see store.Claimer), for
// owner at now, leased until until. Its first claim sets claimPlanSQL.
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

// plan sets claimPlanSQL once.
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

// collectClaimed reads the rows of a claim, and counts the jobs it took
// as moved from pending to running.
func collectClaimed(d store.CountDeltas, rows pgx.Rows, err error) ([]*store.Job, error) {
	return store.Collect(store.Read(rows, err), func(r store.Row) (*store.Job, error) {
		j, err := store.ScanJob(r)
		if err == nil {
			d.Move(j.Type, store.StatePending, store.StateRunning, 1)
		}
		return j, err
	})
}
