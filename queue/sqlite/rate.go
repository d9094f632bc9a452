package sqlite

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The statements of a claim within a rate limit (store.ClaimRatedType). The
// claim holds the write turn, so no other process reads a bucket between its
// read and its write.
const (
	// rateCandidatesSQL reads a type's next ready jobs and payloads (?1
	// now, ?2 type, ?3 how many, ?4 versions).
	rateCandidatesSQL = `SELECT id, payload FROM jobs INDEXED BY jobs_ready
WHERE state = 'pending' AND run_at <= ?1 AND type = ?2 AND version IN (SELECT value FROM json_each(?4))
ORDER BY priority DESC, run_at, id
LIMIT ?3`
	rateBucketsSQL = `SELECT key, tat FROM rate_limits WHERE type = ?1 AND key IN (SELECT value FROM json_each(?2))`
	rateWriteSQL   = `INSERT INTO rate_limits (type, key, tat) VALUES (?1, ?2, ?3)
ON CONFLICT (type, key) DO UPDATE SET tat = excluded.tat`
	// ratePauseSQL raises a bucket's TAT to at least ?3.
	ratePauseSQL = `INSERT INTO rate_limits (type, key, tat) VALUES (?1, ?2, ?3)
ON CONFLICT (type, key) DO UPDATE SET tat = max(tat, excluded.tat)`
	claimIDsSQL = `UPDATE jobs SET state = 'running', attempt = attempt + 1, owner = ?1, lease_until = ?2, started_at = ?3, finished_at = NULL
WHERE id IN (SELECT value FROM json_each(?4)) AND state = 'pending'
RETURNING ` + claimColumns
)

func (c claimer) RateCandidates(ctx context.Context, r store.RatedClaim, window int) store.Reading {
	return store.Read(wrap(c.tx.query(ctx, rateCandidatesSQL, ms(c.now), r.Type, window, versionsJSON(r.AcceptedVersions()))))
}

func (c claimer) RateBuckets(ctx context.Context, typ string, keys []string) store.Reading {
	return store.Read(c.tx.Query(ctx, rateBucketsSQL, typ, keys))
}

func (c claimer) ClaimIDs(ctx context.Context, ids []int64) ([]*store.Job, error) {
	return c.scan(c.tx.query(ctx, claimIDsSQL, c.owner, ms(c.until), ms(c.now), idsText(ids)))
}

func (c claimer) WriteBuckets(ctx context.Context, typ string, keys []string, tats map[string]time.Time) error {
	for _, k := range keys {
		if _, err := c.tx.exec(ctx, rateWriteSQL, typ, k, msUp(tats[k])); err != nil {
			return err
		}
	}
	return nil
}

// msUp is t in Unix milliseconds, rounded up so a TAT read back never lets
// one start too many into its window.
func msUp(t time.Time) int64 {
	m := t.UnixMilli()
	if time.UnixMilli(m).Before(t) {
		m++
	}
	return m
}

// PauseRate implements store.PoolProtocol.PauseRate.
func (s *Store) PauseRate(ctx context.Context, typ, key string, tat time.Time) error {
	return s.inTx(ctx, false, func(tx txn) error {
		_, err := tx.exec(ctx, ratePauseSQL, typ, key, msUp(tat))
		return err
	})
}
