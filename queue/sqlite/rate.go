package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// rateCandidatesSQL reads the next ready jobs of one type in claim order,
// with their payloads, for a claim within a rate limit (?1 now, ?2 the
// type, ?3 how many, ?4 the versions accepted, a JSON array).
const rateCandidatesSQL = `SELECT id, payload FROM jobs INDEXED BY jobs_ready
WHERE state = 'pending' AND run_at <= ?1 AND type = ?2 AND version IN (SELECT value FROM json_each(?4))
ORDER BY priority DESC, run_at, id
LIMIT ?3`

// rateBucketsSQL reads the TATs of a type's buckets of the keys in a JSON
// array.
const rateBucketsSQL = `SELECT key, tat FROM rate_limits WHERE type = ?1 AND key IN (SELECT value FROM json_each(?2))`

// rateWriteSQL sets a bucket's TAT.
const rateWriteSQL = `INSERT INTO rate_limits (type, key, tat) VALUES (?1, ?2, ?3)
ON CONFLICT (type, key) DO UPDATE SET tat = excluded.tat`

// ratePauseSQL raises a bucket's TAT to at least ?3.
const ratePauseSQL = `INSERT INTO rate_limits (type, key, tat) VALUES (?1, ?2, ?3)
ON CONFLICT (type, key) DO UPDATE SET tat = max(tat, excluded.tat)`

// claimIDsSQL claims the pending jobs of a JSON array of ids.
const claimIDsSQL = `UPDATE jobs SET state = 'running', attempt = attempt + 1, owner = ?1, lease_until = ?2, started_at = ?3, finished_at = NULL
WHERE id IN (SELECT value FROM json_each(?4)) AND state = 'pending'
RETURNING ` + claimColumns

// purgeRateLimitsSQL deletes the buckets that are full again.
const purgeRateLimitsSQL = `DELETE FROM rate_limits WHERE tat < ?1`

// claimRated claims, for a type with a rate limit, up to room of its ready
// jobs that their buckets allow at now, in claim order, and moves those
// buckets; the transaction holds the write lock, so no other process
// reads a bucket between. wait is the earliest next start of a bucket that
// held a ready job back (zero: none).
func claimRated(ctx context.Context, tx txn, owner string, until, now time.Time, r store.RatedClaim, room int) (jobs []*store.Job, wait time.Time, err error) {
	rows, err := tx.query(ctx, rateCandidatesSQL, ms(now), r.Type, r.Window(room), versionsJSON(r.AcceptedVersions()))
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
	tats := map[string]time.Time{}
	b, _ := json.Marshal(store.RateKeys(cands))
	rows, err = tx.query(ctx, rateBucketsSQL, r.Type, string(b))
	if err != nil {
		return nil, time.Time{}, err
	}
	for rows.Next() {
		var k string
		var tat int64
		if err := rows.Scan(&k, &tat); err != nil {
			rows.Close()
			return nil, time.Time{}, err
		}
		tats[k] = time.UnixMilli(tat).UTC()
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, err
	}
	picked, changed, wait := store.TakeRated(r.Limit, now, cands, tats, room)
	if len(picked) == 0 {
		return nil, wait, nil
	}
	ids := make([]byte, 0, 8*len(picked))
	ids = append(ids, '[')
	for i, id := range picked {
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = strconv.AppendInt(ids, id, 10)
	}
	ids = append(ids, ']')
	rows, err = tx.query(ctx, claimIDsSQL, owner, ms(until), ms(now), string(ids))
	if err != nil {
		return nil, time.Time{}, err
	}
	defer rows.Close()
	for rows.Next() {
		j, err := scanClaimed(rows, owner, until, now)
		if err != nil {
			return nil, time.Time{}, err
		}
		tx.counts.Move(j.Type, store.StatePending, store.StateRunning, 1)
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, err
	}
	for _, k := range changed {
		if _, err := tx.exec(ctx, rateWriteSQL, r.Type, k, msUp(tats[k])); err != nil {
			return nil, time.Time{}, fmt.Errorf("rate limit of %s: %w", r.Type, err)
		}
	}
	return jobs, wait, nil
}

// msUp is t in Unix milliseconds, rounded up: a bucket's TAT is stored no
// earlier than it is, so that its next start, read back, is never early
// ("3/1s" is one start per 333.333334ms, and rounded down a fourth start
// would fit in a second).
func msUp(t time.Time) int64 {
	m := t.UnixMilli()
	if time.UnixMilli(m).Before(t) {
		m++
	}
	return m
}

// PauseRate raises the TAT of the bucket of typ and key to at least tat
// (see store.RateLimit.PauseTAT).
func (s *Store) PauseRate(ctx context.Context, typ, key string, tat time.Time) error {
	return s.inTx(ctx, false, func(tx txn) error {
		_, err := tx.exec(ctx, ratePauseSQL, typ, key, msUp(tat))
		return err
	})
}

// RateTAT returns the TAT of the bucket of typ and key; zero when it has no
// row (a full bucket).
func (s *Store) RateTAT(ctx context.Context, typ, key string) (time.Time, error) {
	var tat int64
	err := s.r.QueryRowContext(ctx, `SELECT tat FROM rate_limits WHERE type = ? AND key = ?`, typ, key).Scan(&tat)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("rate limit of %s: %w", typ, err)
	}
	return time.UnixMilli(tat).UTC(), nil
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
// jobs of types; zero when none. It reads, without the write lock.
func (s *Store) NextReadyAfter(ctx context.Context, types []string, since time.Time) (time.Time, error) {
	var r sql.NullInt64
	st, err := s.readStmt(ctx, nextReadyAfterSQL)
	if err != nil {
		return time.Time{}, fmt.Errorf("next ready: %w", err)
	}
	if err := st.QueryRowContext(ctx, s.types.json(types), ms(since)).Scan(&r); err != nil {
		return time.Time{}, fmt.Errorf("next ready: %w", err)
	}
	return fromMS(r), nil
}
