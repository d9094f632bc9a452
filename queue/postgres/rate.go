package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The statements of a claim within a rate limit (store.ClaimRatedType). The
// claim locks its candidates and their buckets, so another node's claim
// waits, then reads what it wrote.
const (
	// rateCandidatesSQL reads and locks a type's next ready jobs ($1 now,
	// $2 type, $3 how many, $4 versions), skipping rows others hold.
	rateCandidatesSQL = `SELECT id, payload FROM jobs
WHERE state = 'pending' AND run_at <= $1 AND type = $2 AND version = ANY($4)
ORDER BY priority DESC, run_at, id
LIMIT $3
FOR UPDATE SKIP LOCKED`
	// rateNewBucketsSQL ensures a full row for each key $2 of type $1,
	// before rateBucketsSQL, whose snapshot would not see its inserts; at
	// another node's uncommitted row of a key, it waits.
	rateNewBucketsSQL = `INSERT INTO rate_limits (type, key, tat) SELECT $1, key, 'epoch' FROM unnest($2::text[]) AS key
ON CONFLICT (type, key) DO NOTHING`
	rateBucketsSQL = `SELECT key, tat FROM rate_limits WHERE type = $1 AND key = ANY($2) ORDER BY key FOR UPDATE`
	rateWriteSQL   = `UPDATE rate_limits SET tat = v.tat
FROM unnest($2::text[], $3::timestamptz[]) AS v(key, tat)
WHERE rate_limits.type = $1 AND rate_limits.key = v.key`
	ratePauseSQL = `INSERT INTO rate_limits (type, key, tat) VALUES ($1, $2, $3)
ON CONFLICT (type, key) DO UPDATE SET tat = greatest(rate_limits.tat, excluded.tat)`
)

var claimIDsSQL = `UPDATE jobs SET state = 'running', attempt = attempt + 1, owner = $1, lease_until = $2, started_at = $3, finished_at = NULL
WHERE id = ANY($4) AND state = 'pending'
RETURNING ` + jobColumnsOf + `, jobs.fanin_id, jobs.trace`

func (c claimer) RateCandidates(ctx context.Context, r store.RatedClaim, window int) store.Reading {
	if err := c.plan(ctx); err != nil {
		return store.Read(nil, err)
	}
	return store.Read(txn{q: c.tx}.Query(ctx, rateCandidatesSQL, c.now, r.Type, window, r.AcceptedVersions()))
}

func (c claimer) RateBuckets(ctx context.Context, typ string, keys []string) store.Reading {
	if _, err := c.tx.Exec(ctx, rateNewBucketsSQL, typ, keys); err != nil {
		return store.Read(nil, err)
	}
	return store.Read(txn{q: c.tx}.Query(ctx, rateBucketsSQL, typ, keys))
}

func (c claimer) ClaimIDs(ctx context.Context, ids []int64) ([]*store.Job, error) {
	rows, err := c.tx.Query(ctx, claimIDsSQL, c.owner, c.until, c.now, ids)
	return collectClaimed(c.counts, rows, err)
}

func (c claimer) WriteBuckets(ctx context.Context, typ string, keys []string, tats map[string]time.Time) error {
	at := make([]time.Time, len(keys))
	for i, k := range keys {
		at[i] = microsUp(tats[k])
	}
	_, err := c.tx.Exec(ctx, rateWriteSQL, typ, keys, at)
	return err
}

// microsUp is t rounded up to the microsecond, timestamptz's precision, so a
// TAT read back never allows an early start.
func microsUp(t time.Time) time.Time {
	if u := t.Truncate(time.Microsecond); u.Before(t) {
		return u.Add(time.Microsecond)
	}
	return t
}

// PauseRate implements store.PoolProtocol.PauseRate.
func (s *Store) PauseRate(ctx context.Context, typ, key string, tat time.Time) error {
	if _, err := s.pool.Exec(ctx, ratePauseSQL, typ, key, microsUp(tat)); err != nil {
		return fmt.Errorf("pause rate limit of %s: %w", typ, err)
	}
	return nil
}
