package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// rateCandidatesSQL reads and locks the next ready jobs of one type in
// claim order, with their payloads, for a claim within a rate limit ($1
// now, $2 the type, $3 how many, $4 the versions accepted). Rows locked by
// another node's claim are passed over, as claimSQL does.
const rateCandidatesSQL = `SELECT id, payload FROM jobs
WHERE state = 'pending' AND run_at <= $1 AND type = $2 AND version = ANY($4)
ORDER BY priority DESC, run_at, id
LIMIT $3
FOR UPDATE SKIP LOCKED`

// rateNewBucketsSQL makes sure a row exists for each key of $2 (sorted)
// of type $1: a new row holds the epoch, a full bucket. It is a statement
// of its own, before rateBucketsSQL, because rows a statement inserts are
// not in its own snapshot; an insert that meets another node's
// uncommitted row of the same key waits for it.
const rateNewBucketsSQL = `INSERT INTO rate_limits (type, key, tat) SELECT $1, key, 'epoch' FROM unnest($2::text[]) AS key
ON CONFLICT (type, key) DO NOTHING`

// rateBucketsSQL reads and locks type $1's buckets of keys $2 in key
// order: a claim on another node that needs one of these buckets waits for
// this transaction, and then reads what it wrote.
const rateBucketsSQL = `SELECT key, tat FROM rate_limits WHERE type = $1 AND key = ANY($2) ORDER BY key FOR UPDATE`

// rateWriteSQL sets the TATs of type $1's buckets of keys $2 to $3.
const rateWriteSQL = `UPDATE rate_limits SET tat = v.tat
FROM unnest($2::text[], $3::timestamptz[]) AS v(key, tat)
WHERE rate_limits.type = $1 AND rate_limits.key = v.key`

// ratePauseSQL raises a bucket's TAT to at least $3.
const ratePauseSQL = `INSERT INTO rate_limits (type, key, tat) VALUES ($1, $2, $3)
ON CONFLICT (type, key) DO UPDATE SET tat = greatest(rate_limits.tat, excluded.tat)`

// claimIDsSQL claims the jobs of ids $4, which the transaction locked.
const claimIDsSQL = `UPDATE jobs SET state = 'running', attempt = attempt + 1, owner = $1, lease_until = $2, started_at = $3, finished_at = NULL
WHERE id = ANY($4) AND state = 'pending'
RETURNING ` + jobColumnsOf

// purgeRateLimitsSQL deletes the buckets that are full again.
const purgeRateLimitsSQL = `DELETE FROM rate_limits WHERE tat < $1`

// claimRated claims, for a type with a rate limit, up to room of its ready
// jobs that their buckets allow at now, in claim order, and moves those
// buckets, whose rows the transaction holds locked. wait is the earliest
// next start of a bucket that held a ready job back (zero: none).
func claimRated(ctx context.Context, tx querier, d store.CountDeltas, owner string, until, now time.Time, r store.RatedClaim, room int) (jobs []*store.Job, wait time.Time, err error) {
	rows, err := tx.Query(ctx, rateCandidatesSQL, now, r.Type, r.Window(room), r.AcceptedVersions())
	if err != nil {
		return nil, time.Time{}, err
	}
	var cands []store.RateCandidate
	for rows.Next() {
		var id int64
		var payload string
		if err := rows.Scan(&id, &payload); err != nil {
			rows.Close()
			return nil, time.Time{}, err
		}
		cands = append(cands, r.Candidate(id, payload))
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(cands) == 0 {
		return nil, time.Time{}, err
	}
	keys := store.RateKeys(cands)
	if _, err := tx.Exec(ctx, rateNewBucketsSQL, r.Type, keys); err != nil {
		return nil, time.Time{}, err
	}
	rows, err = tx.Query(ctx, rateBucketsSQL, r.Type, keys)
	if err != nil {
		return nil, time.Time{}, err
	}
	tats := map[string]time.Time{}
	for rows.Next() {
		var k string
		var tat time.Time
		if err := rows.Scan(&k, &tat); err != nil {
			rows.Close()
			return nil, time.Time{}, err
		}
		tats[k] = tat
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, err
	}
	picked, changed, wait := store.TakeRated(r.Limit, now, cands, tats, room)
	if len(picked) == 0 {
		return nil, wait, nil
	}
	rows, err = tx.Query(ctx, claimIDsSQL, owner, until, now, picked)
	if jobs, err = collectClaimed(d, rows, err); err != nil {
		return nil, time.Time{}, err
	}
	at := make([]time.Time, len(changed))
	for i, k := range changed {
		at[i] = microsUp(tats[k])
	}
	if _, err := tx.Exec(ctx, rateWriteSQL, r.Type, changed, at); err != nil {
		return nil, time.Time{}, fmt.Errorf("rate limit of %s: %w", r.Type, err)
	}
	return jobs, wait, nil
}

// microsUp is t rounded up to the microsecond, the precision of
// timestamptz: a bucket's TAT is stored no earlier than it is, so that its
// next start, read back, is never early.
func microsUp(t time.Time) time.Time {
	if u := t.Truncate(time.Microsecond); u.Before(t) {
		return u.Add(time.Microsecond)
	}
	return t
}

// PauseRate raises the TAT of the bucket of typ and key to at least tat
// (see store.RateLimit.PauseTAT).
func (s *Store) PauseRate(ctx context.Context, typ, key string, tat time.Time) error {
	if _, err := s.pool.Exec(ctx, ratePauseSQL, typ, key, microsUp(tat)); err != nil {
		return fmt.Errorf("pause rate limit of %s: %w", typ, err)
	}
	return nil
}

// RateTAT returns the TAT of the bucket of typ and key; zero when it has no
// row (a full bucket).
func (s *Store) RateTAT(ctx context.Context, typ, key string) (time.Time, error) {
	var tat time.Time
	err := s.pool.QueryRow(ctx, `SELECT tat FROM rate_limits WHERE type = $1 AND key = $2`, typ, key).Scan(&tat)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("rate limit of %s: %w", typ, err)
	}
	return tat, nil
}

// nextReadyAfterSQL finds the earliest run_at after $2 of the pending jobs
// of the types $1, by the skip-scan of nextWakeSQL, each priority's walk
// starting at $2.
const nextReadyAfterSQL = `WITH RECURSIVE p(pr) AS (
	(SELECT priority FROM jobs WHERE state = 'pending' ORDER BY priority DESC LIMIT 1)
	UNION ALL
	SELECT (SELECT priority FROM jobs WHERE state = 'pending' AND priority < p.pr ORDER BY priority DESC LIMIT 1)
	FROM p WHERE p.pr IS NOT NULL
)
SELECT min((SELECT run_at FROM jobs WHERE state = 'pending' AND priority = p.pr AND run_at > $2 AND type = ANY($1)
	ORDER BY priority DESC, run_at LIMIT 1))
FROM p WHERE p.pr IS NOT NULL`

// NextReadyAfter returns the earliest run_at after since of the pending
// jobs of types; zero when none.
func (s *Store) NextReadyAfter(ctx context.Context, types []string, since time.Time) (time.Time, error) {
	var r *time.Time
	if err := s.pool.QueryRow(ctx, nextReadyAfterSQL, types, since).Scan(&r); err != nil {
		return time.Time{}, fmt.Errorf("next ready: %w", err)
	}
	return fromTS(r), nil
}
