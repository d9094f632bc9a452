package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/scheduler-run/scheduler/queue/store"
)

// generatedKey matches the keys store.RandomKey makes: Purge does not keep them
// in used_keys, nothing can enqueue the same one again.
const generatedKey = `^job\|[0-9a-f]{32}$`

var generatedKeyRE = regexp.MustCompile(generatedKey)

// insertOneSQL inserts a job unless its key is used, by a job or by one
// purged since (used_keys), and otherwise returns the existing job's id, in
// one statement, which also counts it (see writeCounts).
// When it returns no row, the key was taken by a transaction that
// committed after the statement's snapshot, or is in used_keys:
// jobIDByKeySQL, with a new snapshot, tells which.
const insertOneSQL = `WITH ins AS (
	INSERT INTO jobs (key, type, payload, state, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, version, alarm_key)
	SELECT $1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $10, $12, $13
	WHERE NOT EXISTS (SELECT 1 FROM used_keys WHERE key = $1)
	ON CONFLICT (key) DO NOTHING
	RETURNING id, type
), c AS (
	INSERT INTO job_counts (type, state, slot, n) SELECT type, 'pending', $11, 1 FROM ins
	ON CONFLICT (type, state, slot) DO UPDATE SET n = job_counts.n + 1
)
SELECT id, true FROM ins
UNION ALL
SELECT id, false FROM jobs WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM ins)`

const jobIDByKeySQL = `SELECT id FROM jobs WHERE key = $1`

// Enqueue adds a job unless one with the same key exists (or existed and
// was purged), in one statement: one round trip, unless the key was taken
// or purged.
func (s *Store) Enqueue(ctx context.Context, nj store.NewJob) (store.Enqueued, error) {
	now := ts(s.now())
	jobs, err := store.PrepareJobs([]store.NewJob{nj}, now)
	if err != nil {
		return store.Enqueued{}, err
	}
	j := jobs[0]
	if j.SkipIfActive {
		res, err := s.EnqueueBatch(ctx, jobs)
		if err != nil {
			return store.Enqueued{}, err
		}
		return res[0], nil
	}
	res := store.Enqueued{Key: j.Key}
	err = s.pool.QueryRow(ctx, insertOneSQL, j.Key, j.Type, string(j.Payload), j.MaxAttempts, j.Priority, ts(j.RunAt),
		store.TextOrNull(j.Schedule), j.Item, nullTS(j.ScheduledAt), now, rand.IntN(countSlots), j.Version, store.TextOrNull(j.AlarmKey)).Scan(&res.ID, &res.Inserted)
	if err != nil && !errNoRows(err) {
		return store.Enqueued{}, fmt.Errorf("enqueue %q: %w", j.Key, err)
	}
	if res.ID == 0 {
		err := s.pool.QueryRow(ctx, jobIDByKeySQL, j.Key).Scan(&res.ID)
		switch {
		case errNoRows(err):
			res.Purged = true
		case err != nil:
			return store.Enqueued{}, fmt.Errorf("look up existing job %q: %w", j.Key, err)
		}
	}
	if res.Inserted {
		store.Wake(s.Base)
	}
	return res, nil
}

// EnqueueBatch enqueues jobs in one transaction: all or none. Without a
// job that skips if active, the transaction is the one statement that
// inserts them all and counts them.
func (s *Store) EnqueueBatch(ctx context.Context, jobs []store.NewJob) ([]store.Enqueued, error) {
	now := ts(s.now())
	prepared, err := store.PrepareJobs(jobs, now)
	if err != nil {
		return nil, err
	}
	var res []store.Enqueued
	if !slices.ContainsFunc(prepared, func(j store.NewJob) bool { return j.SkipIfActive }) {
		// For speed: one statement inserts every job and adds them to the
		// counts, all or none, in a transaction of its own, where BEGIN,
		// the count write and COMMIT would add three round trips to it.
		// The look-up of the ids of keys already used, if any, follows it,
		// as Enqueue's does.
		res, err = insertBatch(ctx, s.pool, nil, prepared, now)
	} else {
		err = s.inTx(ctx, func(tx txn) error {
			var err error
			res, err = insertJobs(ctx, tx.q, tx.counts, prepared, now)
			return err
		})
	}
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	if store.Inserted(res) {
		store.Wake(s.Base)
	}
	return res, nil
}

// EnqueueTx enqueues jobs inside tx, a transaction of the caller's on the
// store's database (with the store's schema in its search_path), so that
// the jobs commit or roll back with the caller's own writes: a
// transactional outbox. The notification that wakes the pools is sent in
// tx too, and delivered when it commits. It is a function, not a method of
// Store: the caller's transaction may come from any connection, and a
// program that only enqueues this way needs no Store open. For the same
// reason the time it stamps is the server's, read in tx.
//
// A *sql.Tx variant is not offered: database/sql gives no access to the
// connection under a *sql.Tx, so the engine would need its statements
// twice, once for each driver interface.
func EnqueueTx(ctx context.Context, tx pgx.Tx, jobs ...store.NewJob) ([]store.Enqueued, error) {
	var schema string
	var now time.Time
	if err := tx.QueryRow(ctx, `SELECT current_schema(), clock_timestamp()`).Scan(&schema, &now); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	now = ts(now)
	prepared, err := store.PrepareJobs(jobs, now)
	if err != nil {
		return nil, err
	}
	d := store.CountDeltas{}
	res, err := insertJobs(ctx, tx, d, prepared, now)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	// The count rows stay locked until the caller commits: a transaction
	// that enqueues this way is best short.
	if err := writeCounts(ctx, tx, d); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	if !store.Inserted(res) {
		return res, nil
	}
	if _, err := tx.Exec(ctx, notifySQL, channelName(schema)); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	return res, nil
}

// insertBatchSQL inserts many jobs in one statement from arrays, one per
// column, those whose key is used excepted: a later job with the key of an
// earlier one is not inserted (ON CONFLICT DO NOTHING sees the rows the
// statement inserted before).
//
// The ids are drawn in the order of the jobs, but the rows are inserted in
// the order of their keys. Two batches with keys in common, inserted in
// their own orders, could each wait on a key the other inserted first: a
// deadlock. In key order, a batch waits only on a key after all those it
// holds. (The CTE is MATERIALIZED, as one with nextval always is, so the
// ids are drawn before the sort.)
const insertBatchSQL = `WITH v AS MATERIALIZED (
	SELECT nextval('jobs_id_seq') AS id, v.*
	FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::timestamptz[], $7::text[], $8::text[], $9::timestamptz[], $10::int[], $12::text[])
		WITH ORDINALITY AS v(key, type, payload, max_attempts, priority, run_at, schedule, item, scheduled_at, version, alarm_key, n)
)
INSERT INTO jobs (id, key, type, payload, state, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, version, alarm_key)
SELECT v.id, v.key, v.type, v.payload, 'pending', v.max_attempts, v.priority, v.run_at, v.schedule, v.item, v.scheduled_at, $11, v.version, v.alarm_key
FROM v
WHERE NOT EXISTS (SELECT 1 FROM used_keys u WHERE u.key = v.key)
ORDER BY v.key, v.n
ON CONFLICT (key) DO NOTHING
RETURNING id, key`

// insertBatchCountedSQL is insertBatchSQL that also adds the jobs it
// inserted to the pending counts of the slot $13, for a batch that is a
// transaction of its own. The count rows are locked after every job row
// (the count of a type is an aggregate: it waits for all the rows it
// counts), so that the statement waits for no job row while it holds a
// count row, and in the bytes order of the types (COLLATE "C"), that of
// store.CountDeltas.Sorted and writeCountsSQL: a transaction that writes
// the counts of several types never waits for this one in a cycle.
const insertBatchCountedSQL = `WITH v AS MATERIALIZED (
	SELECT nextval('jobs_id_seq') AS id, v.*
	FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::timestamptz[], $7::text[], $8::text[], $9::timestamptz[], $10::int[], $12::text[])
		WITH ORDINALITY AS v(key, type, payload, max_attempts, priority, run_at, schedule, item, scheduled_at, version, alarm_key, n)
), ins AS (
	INSERT INTO jobs (id, key, type, payload, state, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, version, alarm_key)
	SELECT v.id, v.key, v.type, v.payload, 'pending', v.max_attempts, v.priority, v.run_at, v.schedule, v.item, v.scheduled_at, $11, v.version, v.alarm_key
	FROM v
	WHERE NOT EXISTS (SELECT 1 FROM used_keys u WHERE u.key = v.key)
	ORDER BY v.key, v.n
	ON CONFLICT (key) DO NOTHING
	RETURNING id, key, type
), c AS (
	INSERT INTO job_counts (type, state, slot, n)
	SELECT type, 'pending', $13, count(*) FROM ins GROUP BY type ORDER BY type COLLATE "C"
	ON CONFLICT (type, state, slot) DO UPDATE SET n = job_counts.n + excluded.n
)
SELECT id, key FROM ins`

const jobIDsByKeySQL = `SELECT id, key FROM jobs WHERE key = ANY($1)`

const activeSeriesSQL = `SELECT EXISTS (SELECT 1 FROM jobs
WHERE schedule = $1 AND item = $2 AND state IN ('pending', 'running') AND schedule IS NOT NULL)`

const insertSkipSQL = `INSERT INTO skips (schedule, item, scheduled_at, reason, recorded_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING`

// insertJobs inserts prepared jobs inside tx, in order: a run of jobs
// without SkipIfActive in one statement, a job with it on its own, after
// the look-up that decides between the job and a skip.
// The jobs inserted are counted in d.
func insertJobs(ctx context.Context, tx querier, d store.CountDeltas, jobs []store.NewJob, now time.Time) ([]store.Enqueued, error) {
	res := make([]store.Enqueued, 0, len(jobs))
	for len(jobs) > 0 {
		run := 0
		for run < len(jobs) && !jobs[run].SkipIfActive {
			run++
		}
		if run > 0 {
			r, err := insertBatch(ctx, tx, d, jobs[:run], now)
			if err != nil {
				return nil, err
			}
			res = append(res, r...)
			jobs = jobs[run:]
			continue
		}
		j := jobs[0]
		jobs = jobs[1:]
		var active bool
		if err := tx.QueryRow(ctx, activeSeriesSQL, j.Schedule, j.Item).Scan(&active); err != nil {
			return nil, fmt.Errorf("check overlap of %q: %w", j.Key, err)
		}
		if active {
			if _, err := tx.Exec(ctx, insertSkipSQL, j.Schedule, j.Item, ts(j.ScheduledAt), store.SkipOverlap, now); err != nil {
				return nil, fmt.Errorf("record skip of %q: %w", j.Key, err)
			}
			res = append(res, store.Enqueued{Key: j.Key, Skipped: true})
			continue
		}
		r, err := insertBatch(ctx, tx, d, []store.NewJob{j}, now)
		if err != nil {
			return nil, err
		}
		res = append(res, r...)
	}
	return res, nil
}

// insertBatch inserts jobs (without SkipIfActive) with one statement, then
// looks up the ids of those whose key existed. The jobs inserted are
// counted in d; with d nil, the statement writes their counts itself, in a
// transaction that must be its own (see insertBatchCountedSQL).
func insertBatch(ctx context.Context, tx querier, d store.CountDeltas, jobs []store.NewJob, now time.Time) ([]store.Enqueued, error) {
	n := len(jobs)
	keys, types, payloads := make([]string, n), make([]string, n), make([]string, n)
	maxAttempts, priorities := make([]int32, n), make([]int32, n)
	runAts, scheduledAts := make([]time.Time, n), make([]pgtype.Timestamptz, n)
	schedules, items := make([]*string, n), make([]string, n)
	versions, alarmKeys := make([]int32, n), make([]*string, n)
	for i, j := range jobs {
		versions[i], alarmKeys[i] = int32(j.Version), nullStr(j.AlarmKey)
		keys[i], types[i], payloads[i] = j.Key, j.Type, string(j.Payload)
		maxAttempts[i], priorities[i] = int32(j.MaxAttempts), int32(j.Priority)
		runAts[i], scheduledAts[i] = ts(j.RunAt), nullTS(j.ScheduledAt)
		schedules[i], items[i] = nullStr(j.Schedule), j.Item
	}
	args := []any{keys, types, payloads, maxAttempts, priorities, runAts, schedules, items, scheduledAts, versions, now, alarmKeys}
	query := insertBatchSQL
	if d == nil {
		query, args = insertBatchCountedSQL, append(args, rand.IntN(countSlots))
	}
	ids, err := store.ScanKeyedIDs(store.Read(txn{q: tx}.Query(ctx, query, args...)))
	if err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	res := store.AssignInserted(jobs, ids, func(typ string) {
		if d != nil {
			d.Add(typ, store.StatePending, 1)
		}
	})
	return res, store.ResolveKeys(res, func(keys []string) (map[string]int64, error) {
		return store.ScanKeyedIDs(store.Read(txn{q: tx}.Query(ctx, jobIDsByKeySQL, keys)))
	})
}

// nullStr is s as a nullable text of an array: nil for "".
func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
