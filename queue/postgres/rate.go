package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The statements of a claim within a rate limit (see
// store.ClaimRatedType). The claim locks the candidates it reads and the
// buckets of their keys, so that a claim on another node waits for it
// and then reads what it wrote.
const (
	// rateCandidatesSQL reads and locks the next ready jobs of one type in
	// claim order, with their payloads ($1 now, $2 the type, $3 how many,
	// $4 the versions accepted). Rows locked by another node's claim are
	// passed over, as claimSQL does.
	rateCandidatesSQL = `SELECT id, payload FROM jobs
WHERE state = 'pending' AND run_at <= $1 AND type = $2 AND version = ANY($4)
ORDER BY priority DESC, run_at, id
LIMIT $3
FOR UPDATE SKIP LOCKED`
	// rateNewBucketsSQL makes sure a row exists for each key of $2
	// (sorted) of type $1: a new row holds the epoch, a full bucket. It is
	// a statement of its own, before rateBucketsSQL, because rows a
	// statement inserts are not in its own snapshot; an insert that meets
	// another node's uncommitted row of the same key waits for it.
	rateNewBucketsSQL = `INSERT INTO rate_limits (type, key, tat) SELECT $1, key, 'epoch' FROM unnest($2::text[]) AS key
ON CONFLICT (type, key) DO NOTHING`
	// rateBucketsSQL reads and locks type $1's buckets of keys $2 in key
	// order.
	rateBucketsSQL = `SELECT key, tat FROM rate_limits WHERE type = $1 AND key = ANY($2) ORDER BY key FOR UPDATE`
	// rateWriteSQL sets the TATs of type $1's buckets of keys $2 to $3.
	rateWriteSQL = `UPDATE rate_limits SET tat = v.tat
FROM unnest($2::text[], $3::timestamptz[]) AS v(key, tat)
WHERE rate_limits.type = $1 AND rate_limits.key = v.key`
	// ratePauseSQL raises a bucket's TAT to at least $3.
	ratePauseSQL = `INSERT INTO rate_limits (type, key, tat) VALUES ($1, $2, $3)
ON CONFLICT (type, key) DO UPDATE SET tat = greatest(rate_limits.tat, excluded.tat)`
)

// claimIDsSQL claims the jobs of ids $4, which the transaction locked.
var claimIDsSQL = `UPDATE jobs SET state = 'running', attempt = attempt + 1, owner = $1, lease_until = $2, started_at = $3, finished_at = NULL
WHERE id = ANY($4) AND state = 'pending'
RETURNING ` + jobColumnsOf

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
