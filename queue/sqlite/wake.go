package sqlite

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// nextWakeSQL finds when the next pending job the pool takes becomes ready
// (?2 as in claimableJobs; nextWakeVersionsSQL with ?3 as in
// claimableVersions) without an index on run_at, which every write would pay
// for: a skip-scan of jobs_ready per priority (there are few), taking each
// one's earliest run_at.
var (
	nextWakeSQL = nextWakeOf(`type IN (SELECT value FROM json_each(?2)) AND version = 1`)

	nextWakeVersionsSQL = nextWakeOf(`(version = 1 AND type IN (SELECT value FROM json_each(?2))
			OR version <> 1 AND (type, version) IN (SELECT value->>0, value->>1 FROM json_each(?3)))`)
)

func nextWakeOf(filter string) string {
	return `WITH RECURSIVE p(pr) AS (
	SELECT (SELECT priority FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' ORDER BY priority DESC LIMIT 1)
	UNION ALL
	SELECT (SELECT priority FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' AND priority < p.pr ORDER BY priority DESC LIMIT 1)
	FROM p WHERE p.pr IS NOT NULL
)
SELECT
	(SELECT min((SELECT run_at FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' AND priority = p.pr
		AND ` + filter + `
		ORDER BY run_at LIMIT 1))
	 FROM p WHERE p.pr IS NOT NULL),
	(SELECT min(lease_until) FROM jobs WHERE state = 'running' AND owner != ?1)`
}

// NextWake implements store.PoolProtocol.NextWake, without the write turn.
func (s *Store) NextWake(ctx context.Context, owner string, types []string, versions store.Versions) (ready, lease time.Time, err error) {
	plain, pairs := versions.Split(types)
	q, args := nextWakeSQL, []any{owner, s.types.json(plain)}
	if len(pairs) > 0 {
		q, args = nextWakeVersionsSQL, append(args, pairsJSON(pairs))
	}
	return store.WakeTimes(ctx, s.Base, reader{s}, q, args...)
}

// nextReadyAfterSQL finds the earliest run_at after ?2 of pending jobs of
// types ?1, by nextWakeSQL's skip-scan.
const nextReadyAfterSQL = `WITH RECURSIVE p(pr) AS (
	SELECT (SELECT priority FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' ORDER BY priority DESC LIMIT 1)
	UNION ALL
	SELECT (SELECT priority FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' AND priority < p.pr ORDER BY priority DESC LIMIT 1)
	FROM p WHERE p.pr IS NOT NULL
)
SELECT min((SELECT run_at FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' AND priority = p.pr AND run_at > ?2
	AND type IN (SELECT value FROM json_each(?1)) ORDER BY run_at LIMIT 1))
FROM p WHERE p.pr IS NOT NULL`

// NextReadyAfter implements store.PoolProtocol.NextReadyAfter, without the
// write turn.
func (s *Store) NextReadyAfter(ctx context.Context, types []string, since time.Time) (time.Time, error) {
	return store.ReadyAfter(ctx, reader{s}, nextReadyAfterSQL, s.types.json(types), since)
}
