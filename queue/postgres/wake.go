package postgres

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// nextWakeSQL finds when the next pending job the pool takes ($2 to $4, as in
// claimSQL) becomes ready without an index on run_at: a skip-scan of
// jobs_ready per priority (there are few).
var (
	nextWakeSQL         = nextWakeOf(false)
	nextWakeVersionsSQL = nextWakeOf(true)
)

func nextWakeOf(versions bool) string {
	return `WITH RECURSIVE p(pr) AS (
	(SELECT priority FROM jobs WHERE state = 'pending' ORDER BY priority DESC LIMIT 1)
	UNION ALL
	SELECT (SELECT priority FROM jobs WHERE state = 'pending' AND priority < p.pr ORDER BY priority DESC LIMIT 1)
	FROM p WHERE p.pr IS NOT NULL
)
SELECT
	(SELECT min((SELECT run_at FROM jobs WHERE state = 'pending' AND priority = p.pr AND ` + acceptedJobs(2, versions) + `
		ORDER BY priority DESC, run_at LIMIT 1))
	 FROM p WHERE p.pr IS NOT NULL),
	(SELECT min(lease_until) FROM jobs WHERE state = 'running' AND owner <> $1)`
}

// NextWake implements store.PoolProtocol.NextWake.
func (s *Store) NextWake(ctx context.Context, owner string, types []string, versions store.Versions) (ready, lease time.Time, err error) {
	accepted, withVersions := acceptedArgs(versions.Split(types))
	q := nextWakeSQL
	if withVersions {
		q = nextWakeVersionsSQL
	}
	return store.WakeTimes(ctx, s.Base, txn{q: s.pool}, q, append([]any{owner}, accepted...)...)
}

// nextReadyAfterSQL finds the earliest run_at after $2 of pending jobs of
// types $1, by nextWakeSQL's skip-scan.
const nextReadyAfterSQL = `WITH RECURSIVE p(pr) AS (
	(SELECT priority FROM jobs WHERE state = 'pending' ORDER BY priority DESC LIMIT 1)
	UNION ALL
	SELECT (SELECT priority FROM jobs WHERE state = 'pending' AND priority < p.pr ORDER BY priority DESC LIMIT 1)
	FROM p WHERE p.pr IS NOT NULL
)
SELECT min((SELECT run_at FROM jobs WHERE state = 'pending' AND priority = p.pr AND run_at > $2 AND type = ANY($1)
	ORDER BY priority DESC, run_at LIMIT 1))
FROM p WHERE p.pr IS NOT NULL`

// NextReadyAfter implements store.PoolProtocol.NextReadyAfter.
func (s *Store) NextReadyAfter(ctx context.Context, types []string, since time.Time) (time.Time, error) {
	return store.ReadyAfter(ctx, txn{q: s.pool}, nextReadyAfterSQL, types, since)
}
