package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// generatedKey matches store.RandomKey's keys, which purge does not keep.
const generatedKey = `^job\|[0-9a-f]{32}$`

var generatedKeyRE = regexp.MustCompile(generatedKey)

// insertOneSQL inserts and counts a job unless its key is used (jobs,
// used_keys), else returns the existing id. No row means the key is in
// used_keys or came after the snapshot: jobIDByKeySQL tells which.
const insertOneSQL = `WITH ins AS (
	INSERT INTO jobs (key, type, payload, state, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, version, alarm_key, trace)
	SELECT $1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $10, $12, $13, $14
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

// Enqueue implements store.Producer.Enqueue in one round trip, unless the key
// was taken or purged.
func (s *Store) Enqueue(ctx context.Context, nj store.NewJob) (store.Enqueued, error) {
	now := ts(s.now())
	jobs, err := store.PrepareJobs([]store.NewJob{nj}, now)
	if err != nil {
		return store.Enqueued{}, err
	}
	store.TraceContext(ctx, jobs)
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
		store.TextOrNull(j.Schedule), j.Item, nullTS(j.ScheduledAt), now, rand.IntN(countSlots), j.Version, store.TextOrNull(j.AlarmKey), store.TextOrNull(j.Trace)).Scan(&res.ID, &res.Inserted)
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

// EnqueueBatch implements store.Producer.EnqueueBatch: without a SkipIfActive
// job, in one statement.
func (s *Store) EnqueueBatch(ctx context.Context, jobs []store.NewJob) ([]store.Enqueued, error) {
	now := ts(s.now())
	prepared, err := store.PrepareJobs(jobs, now)
	if err != nil {
		return nil, err
	}
	store.TraceContext(ctx, prepared)
	var res []store.Enqueued
	if !slices.ContainsFunc(prepared, func(j store.NewJob) bool { return j.SkipIfActive }) {
		// One statement inserts and counts in its own transaction,
		// sparing BEGIN, count write and COMMIT round trips.
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

// EnqueueTx enqueues jobs in tx, the caller's transaction on the store's
// database (its schema in search_path), so they commit with the caller's
// writes: a transactional outbox. The wake-up is sent in tx. It is a
// function, so a program that only enqueues needs no Store; it stamps the
// server's time. There is no *sql.Tx variant: database/sql hides its
// connection, so every statement would be needed twice.
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
	store.TraceContext(ctx, prepared)
	d := store.CountDeltas{}
	res, err := insertJobs(ctx, tx, d, prepared, now)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	// Count rows stay locked until the caller commits: keep it short.
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

// insertBatchSQL inserts many jobs from per-column arrays, skipping used keys
// and repeats. Ids are drawn in job order (the MATERIALIZED nextval CTE) but
// rows inserted in key order: in their own orders, two batches sharing keys
// could each wait on the other's, a deadlock.
const insertBatchSQL = `WITH v AS MATERIALIZED (
	SELECT nextval('jobs_id_seq') AS id, v.*
	FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::timestamptz[], $7::text[], $8::text[], $9::timestamptz[], $10::int[], $12::text[], $13::text[])
		WITH ORDINALITY AS v(key, type, payload, max_attempts, priority, run_at, schedule, item, scheduled_at, version, alarm_key, trace, n)
)
INSERT INTO jobs (id, key, type, payload, state, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, version, alarm_key, trace)
SELECT v.id, v.key, v.type, v.payload, 'pending', v.max_attempts, v.priority, v.run_at, v.schedule, v.item, v.scheduled_at, $11, v.version, v.alarm_key, v.trace
FROM v
WHERE NOT EXISTS (SELECT 1 FROM used_keys u WHERE u.key = v.key)
ORDER BY v.key, v.n
ON CONFLICT (key) DO NOTHING
RETURNING id, key`

// insertBatchCountedSQL also adds its jobs to slot $14's pending counts, for
// a batch in its own transaction. It locks count rows after every job row (a
// count aggregates them) and by type bytes (COLLATE "C"), as
// store.CountDeltas.Sorted does, so no count writer waits on it in a cycle.
const insertBatchCountedSQL = `WITH v AS MATERIALIZED (
	SELECT nextval('jobs_id_seq') AS id, v.*
	FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[], $6::timestamptz[], $7::text[], $8::text[], $9::timestamptz[], $10::int[], $12::text[], $13::text[])
		WITH ORDINALITY AS v(key, type, payload, max_attempts, priority, run_at, schedule, item, scheduled_at, version, alarm_key, trace, n)
), ins AS (
	INSERT INTO jobs (id, key, type, payload, state, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, version, alarm_key, trace)
	SELECT v.id, v.key, v.type, v.payload, 'pending', v.max_attempts, v.priority, v.run_at, v.schedule, v.item, v.scheduled_at, $11, v.version, v.alarm_key, v.trace
	FROM v
	WHERE NOT EXISTS (SELECT 1 FROM used_keys u WHERE u.key = v.key)
	ORDER BY v.key, v.n
	ON CONFLICT (key) DO NOTHING
	RETURNING id, key, type
), c AS (
	INSERT INTO job_counts (type, state, slot, n)
	SELECT type, 'pending', $14, count(*) FROM ins GROUP BY type ORDER BY type COLLATE "C"
	ON CONFLICT (type, state, slot) DO UPDATE SET n = job_counts.n + excluded.n
)
SELECT id, key FROM ins`

const jobIDsByKeySQL = `SELECT id, key FROM jobs WHERE key = ANY($1)`

const activeSeriesSQL = `SELECT EXISTS (SELECT 1 FROM jobs
WHERE schedule = $1 AND item = $2 AND state IN ('pending', 'running') AND schedule IS NOT NULL)`

const insertSkipSQL = `INSERT INTO skips (schedule, item, scheduled_at, reason, recorded_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING`

// insertJobs inserts prepared jobs in tx, in order, counting them in d: a run
// without SkipIfActive in one statement, each SkipIfActive job alone.
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

// insertBatch inserts jobs without SkipIfActive in one statement and looks up
// the ids of used keys. It counts them in d, or with d nil in the statement,
// which must then be its own transaction.
func insertBatch(ctx context.Context, tx querier, d store.CountDeltas, jobs []store.NewJob, now time.Time) ([]store.Enqueued, error) {
	n := len(jobs)
	keys, types, payloads := make([]string, n), make([]string, n), make([]string, n)
	maxAttempts, priorities := make([]int32, n), make([]int32, n)
	runAts, scheduledAts := make([]time.Time, n), make([]pgtype.Timestamptz, n)
	schedules, items := make([]*string, n), make([]string, n)
	versions, alarmKeys, traces := make([]int32, n), make([]*string, n), make([]*string, n)
	for i, j := range jobs {
		versions[i], alarmKeys[i], traces[i] = int32(j.Version), nullStr(j.AlarmKey), nullStr(j.Trace)
		keys[i], types[i], payloads[i] = j.Key, j.Type, string(j.Payload)
		maxAttempts[i], priorities[i] = int32(j.MaxAttempts), int32(j.Priority)
		runAts[i], scheduledAts[i] = ts(j.RunAt), nullTS(j.ScheduledAt)
		schedules[i], items[i] = nullStr(j.Schedule), j.Item
	}
	args := []any{keys, types, payloads, maxAttempts, priorities, runAts, schedules, items, scheduledAts, versions, now, alarmKeys, traces}
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

func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// txBase runs the shared flow in a caller's transaction (EnqueueFanInTx):
// it needs the statements and the inserts, which use only the transaction.
var txBase = store.NewBase(backend{}, &queries, clock.Real{}, slog.New(slog.DiscardHandler), store.PurgeConfig{})

// EnqueueFanInTx enqueues f in tx, the caller's transaction on the store's
// database, as EnqueueTx does its jobs: f's members, f itself, or nothing
// when a fan-in of its key exists.
func EnqueueFanInTx(ctx context.Context, tx pgx.Tx, f store.NewFanIn) (store.FanInEnqueued, error) {
	var schema string
	var now time.Time
	if err := tx.QueryRow(ctx, `SELECT current_schema(), clock_timestamp()`).Scan(&schema, &now); err != nil {
		return store.FanInEnqueued{}, fmt.Errorf("enqueue fan-in: %w", err)
	}
	now = ts(now)
	specs, jobs, err := store.PrepareNewFanIn(f, now)
	if err != nil {
		return store.FanInEnqueued{}, err
	}
	t := txn{q: tx, counts: store.CountDeltas{}}
	res, fired, err := store.EnqueueFanInTx(ctx, txBase, t, specs, jobs, now)
	if err != nil {
		return store.FanInEnqueued{}, fmt.Errorf("enqueue fan-in %q: %w", specs[0].Key, err)
	}
	if err := writeCounts(ctx, tx, t.counts); err != nil {
		return store.FanInEnqueued{}, fmt.Errorf("enqueue fan-in %q: %w", specs[0].Key, err)
	}
	if store.Inserted(res.Jobs) || fired {
		if _, err := tx.Exec(ctx, notifySQL, channelName(schema)); err != nil {
			return store.FanInEnqueued{}, fmt.Errorf("enqueue fan-in %q: %w", specs[0].Key, err)
		}
	}
	return res, nil
}
