package sqlite

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// nextWakeSQL finds when the next pending job becomes ready without an
// index of its own on run_at: it walks jobs_ready once per distinct priority
// (a skip-scan; there are few priorities), taking each one's earliest run_at.
// One index fewer is one page fewer written by every enqueue, claim and
// completion. Only jobs of the types in ?2, at version 1, count: those the
// pool has a handler for and accepts, as in claimableJobs; a job it cannot
// run must not wake it. Jobs of other types or versions at the head of a
// priority are walked past, once per short claim. nextWakeVersionsSQL is
// the same for a pool that takes other versions than 1 of some type, with
// claimableVersions's filter (?3 the pairs).
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

// NextWake returns when the next pending job of one of types, of a version
// versions accepts, becomes ready and when the earliest lease held by an
// owner other than owner expires (zero when none), as reclaim judges it
// (see store.Leases). It reads, without the write turn.
func (s *Store) NextWake(ctx context.Context, owner string, types []string, versions store.Versions) (ready, lease time.Time, err error) {
	plain, pairs := versions.Split(types)
	q, args := nextWakeSQL, []any{owner, s.types.json(plain)}
	if len(pairs) > 0 {
		q, args = nextWakeVersionsSQL, append(args, pairsJSON(pairs))
	}
	return store.WakeTimes(ctx, s.Base, reader{s}, q, args...)
}

// nextReadyAfterSQL finds the earliest run_at after ?2 of the pending jobs
// of the types in the JSON array ?1, by the skip-scan of nextWakeSQL, each
// priority's walk starting at ?2.
const nextReadyAfterSQL = `WITH RECURSIVE p(pr) AS (
	SELECT (SELECT priority FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' ORDER BY priority DESC LIMIT 1)
	UNION ALL
	SELECT (SELECT priority FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' AND priority < p.pr ORDER BY priority DESC LIMIT 1)
	FROM p WHERE p.pr IS NOT NULL
)
SELECT min((SELECT run_at FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' AND priority = p.pr AND run_at > ?2
	AND type IN (SELECT value FROM json_each(?1)) ORDER BY run_at LIMIT 1))
FROM p WHERE p.pr IS NOT NULL`

// NextReadyAfter returns the earliest run_at after since of the pending
// jobs of types; zero when none. It reads, without the write turn.
func (s *Store) NextReadyAfter(ctx context.Context, types []string, since time.Time) (time.Time, error) {
	return store.ReadyAfter(ctx, reader{s}, nextReadyAfterSQL, s.types.json(types), since)
}
