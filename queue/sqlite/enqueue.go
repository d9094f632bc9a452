package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Enqueue implements store.Producer.Enqueue; the commit is durable.
func (s *Store) Enqueue(ctx context.Context, j store.NewJob) (store.Enqueued, error) {
	res, err := s.EnqueueBatch(ctx, []store.NewJob{j})
	if err != nil {
		return store.Enqueued{}, err
	}
	return res[0], nil
}

// EnqueueBatch implements store.Producer.EnqueueBatch. Concurrent calls share
// transactions (see group.go); each returns once its jobs commit.
func (s *Store) EnqueueBatch(ctx context.Context, jobs []store.NewJob) ([]store.Enqueued, error) {
	now := s.clock.Now()
	prepared, err := store.PrepareJobs(jobs, now)
	if err != nil {
		return nil, err
	}
	store.TraceContext(ctx, prepared)
	if s.w == nil {
		return nil, fmt.Errorf("enqueue: %w", errReadOnly)
	}
	return s.enqueueGrouped(&enqueueCall{ctx: ctx, jobs: prepared, now: now, done: make(chan struct{}), turn: make(chan struct{})})
}

// generatedKeyGlob matches store.RandomKey's keys, not schedules' (those have
// two '|' or more). Purge does not keep them in used_keys.
var generatedKeyGlob = "job|" + strings.Repeat("[0-9a-f]", 32)

// insertJobSQL inserts a job unless its key is used, by a job or a purged one
// (used_keys). Whether it did, and the id, come from the changed rows and
// last rowid, not a RETURNING, which SQLite answers through a table.
const insertJobSQL = `INSERT INTO jobs (key, type, payload, state, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, version, alarm_key, trace)
SELECT ?1, ?2, ?3, 'pending', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13
WHERE NOT EXISTS (SELECT 1 FROM used_keys WHERE key = ?1)
ON CONFLICT (key) DO NOTHING`

// inserted reads an insert's row count and last rowid, the last inserted
// job's (the count leaves out the trigger's rows).
func inserted(r sql.Result) (n, last int64, err error) {
	if n, err = r.RowsAffected(); err != nil || n == 0 {
		return n, 0, err
	}
	last, err = r.LastInsertId()
	return n, last, err
}

const activeSeriesSQL = `SELECT 1 FROM jobs
WHERE schedule = ? AND item = ? AND state IN ('pending', 'running') AND schedule IS NOT NULL
LIMIT 1`

// batchRows is how many jobs one multi-row INSERT carries.
const batchRows = 100

const jobValues = "(?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

// insertBatchSQL inserts batchRows jobs, except those whose key is used. It
// has no RETURNING, for speed: SQLite stages returned rows in a table first;
// insertBatch works out the ids instead. It is OR IGNORE rather than ON
// CONFLICT (key) DO NOTHING for speed too: a statement of many rows that
// a constraint could abort half-way copies every page it first changes to
// a statement journal, to undo its own rows alone, and on a file whose
// key and jobs_schedule_at indexes are large that is a page per schedule
// each. With IGNORE no row aborts it. It ignores only a used key, since
// the key is the only constraint a row of store.PrepareJobs can fail
// (max_attempts and version are at least 1, no column is NULL that must
// not be).
var insertBatchSQL = `INSERT OR IGNORE INTO jobs (key, type, payload, state, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, version, alarm_key, trace)
SELECT * FROM (VALUES ` + strings.TrimSuffix(strings.Repeat(jobValues+",\n", batchRows), ",\n") + `) AS v
WHERE NOT EXISTS (SELECT 1 FROM used_keys u WHERE u.key = v.column1)`

const lastJobIDSQL = `SELECT coalesce(max(id), 0) FROM jobs`

// jobsAfterSQL reads the jobs a statement inserted, past the largest id
// before it.
const jobsAfterSQL = `SELECT id, key FROM jobs WHERE id > ?`

const jobIDsByKeySQL = `SELECT id, key FROM jobs WHERE key IN (SELECT value FROM json_each(?))`

// insertJobs inserts prepared jobs in tx, in order: a repeated key is not
// inserted, and SkipIfActive sees the jobs before it. Runs without
// SkipIfActive go batchRows per statement; the rest row by row.
func insertJobs(ctx context.Context, tx txn, jobs []store.NewJob, now time.Time) ([]store.Enqueued, error) {
	if err := tx.readMark(ctx); err != nil {
		return nil, err
	}
	res := make([]store.Enqueued, 0, len(jobs))
	for len(jobs) > 0 {
		run := 0
		for run < len(jobs) && !jobs[run].SkipIfActive {
			run++
		}
		for ; run >= batchRows; run -= batchRows {
			r, err := insertBatch(ctx, tx, jobs[:batchRows], now)
			if err != nil {
				return nil, err
			}
			res = append(res, r...)
			jobs = jobs[batchRows:]
		}
		rows := run
		for rows < len(jobs) && jobs[rows].SkipIfActive {
			rows++
		}
		if rows == 0 {
			continue
		}
		r, err := insertRows(ctx, tx, jobs[:rows], now)
		if err != nil {
			return nil, err
		}
		res = append(res, r...)
		jobs = jobs[rows:]
	}
	return res, nil
}

var testHookInsert func(store.NewJob) error // set by tests: called before each insertRows row

// insertRows inserts jobs one statement each, a SkipIfActive job after its
// look-up.
func insertRows(ctx context.Context, tx txn, jobs []store.NewJob, now time.Time) ([]store.Enqueued, error) {
	ins, err := tx.stmt(ctx, insertJobSQL)
	if err != nil {
		return nil, err
	}
	defer ins.Close()
	res := make([]store.Enqueued, len(jobs))
	for i, j := range jobs {
		res[i].Key = j.Key
		if testHookInsert != nil {
			if err := testHookInsert(j); err != nil {
				return nil, err
			}
		}
		if j.SkipIfActive {
			if res[i].Skipped, err = skipIfActive(ctx, tx, j, now); err != nil {
				return nil, err
			}
			if res[i].Skipped {
				continue
			}
		}
		r, err := ins.ExecContext(ctx, j.Key, j.Type, string(j.Payload), j.MaxAttempts, j.Priority,
			ms(j.RunAt), store.TextOrNull(j.Schedule), j.Item, nullMS(j.ScheduledAt), ms(now), j.Version, store.TextOrNull(j.AlarmKey), store.TextOrNull(j.Trace))
		var n int64
		if err == nil {
			n, res[i].ID, err = inserted(r)
		}
		if err != nil {
			return nil, fmt.Errorf("insert job %q: %w", j.Key, err)
		}
		if res[i].Inserted = n == 1; res[i].Inserted {
			tx.countInserted(j.Type)
		} else {
			res[i].ID = 0
		}
	}
	return res, store.ResolveKeys(res, func(keys []string) (map[string]int64, error) {
		return store.ScanKeyedIDs(store.Read(tx.Query(ctx, jobIDsByKeySQL, keys)))
	})
}

// skipIfActive records a skip of j, and reports so, when a job of its
// schedule's item is pending or running.
func skipIfActive(ctx context.Context, tx txn, j store.NewJob, now time.Time) (bool, error) {
	var one int
	err := tx.queryRow(ctx, activeSeriesSQL, j.Schedule, j.Item).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check overlap of %q: %w", j.Key, err)
	}
	if _, err := tx.exec(ctx, insertSkipSQL, j.Schedule, j.Item, ms(j.ScheduledAt), store.SkipOverlap, ms(now)); err != nil {
		return false, fmt.Errorf("record skip of %q: %w", j.Key, err)
	}
	return true, nil
}

// insertBatch inserts batchRows jobs without SkipIfActive in one statement
// and looks up the ids of those whose key existed. New rows get the largest
// rowid plus one, in VALUES order: if every job went in and the last id is
// the largest before plus their number, they took the ids after it in order;
// else the jobs past it are those inserted.
func insertBatch(ctx context.Context, tx txn, jobs []store.NewJob, now time.Time) ([]store.Enqueued, error) {
	args := make([]any, 0, len(jobs)*13)
	for _, j := range jobs {
		args = append(args, j.Key, j.Type, string(j.Payload), j.MaxAttempts, j.Priority, ms(j.RunAt),
			store.TextOrNull(j.Schedule), j.Item, nullMS(j.ScheduledAt), ms(now), j.Version, store.TextOrNull(j.AlarmKey), store.TextOrNull(j.Trace))
	}
	var before int64
	if err := tx.queryRow(ctx, lastJobIDSQL).Scan(&before); err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	r, err := tx.exec(ctx, insertBatchSQL, args...)
	if err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	n, last, err := inserted(r)
	if err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	if n == int64(len(jobs)) && last == before+n {
		res := make([]store.Enqueued, len(jobs))
		for i, j := range jobs {
			res[i] = store.Enqueued{Key: j.Key, ID: before + 1 + int64(i), Inserted: true}
			tx.countInserted(j.Type)
		}
		return res, nil
	}
	ids, err := store.ScanKeyedIDs(store.Read(wrap(tx.query(ctx, jobsAfterSQL, before))))
	if err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	res := store.AssignInserted(jobs, ids, tx.countInserted)
	return res, store.ResolveKeys(res, func(keys []string) (map[string]int64, error) {
		return store.ScanKeyedIDs(store.Read(tx.Query(ctx, jobIDsByKeySQL, keys)))
	})
}

func nullMS(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

// Tx runs fn in one write transaction, in the write turn, committed durably
// unless fn fails. fn runs the program's statements on tx and enqueues with
// EnqueueTx, all committing together (a transactional outbox); this process's
// pools wake at the commit. fn must not use s otherwise: s's other writes
// wait for the same connection.
func (s *Store) Tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if s.w == nil {
		return errReadOnly
	}
	var enqueued bool
	err := s.inTx(ctx, true, func(t txn) error {
		callerTxs.Store(t.tx, &callerTx{t: t, s: s, enqueued: &enqueued})
		defer callerTxs.Delete(t.tx)
		return fn(t.tx)
	})
	if err == nil && enqueued {
		store.Wake(s.Base)
	}
	return err
}

var callerTxs sync.Map // Store.Tx's transactions by *sql.Tx, for EnqueueTx

// callerTx is a transaction of Store.Tx.
type callerTx struct {
	t        txn
	s        *Store
	enqueued *bool // a job was inserted: wake the pools at the commit
}

// EnqueueTx enqueues jobs in tx, a transaction of Store.Tx, as EnqueueBatch
// does; a failed call leaves tx as it was.
func EnqueueTx(ctx context.Context, tx *sql.Tx, jobs ...store.NewJob) ([]store.Enqueued, error) {
	v, ok := callerTxs.Load(tx)
	if !ok {
		return nil, errors.New("enqueue: not a transaction of Store.Tx")
	}
	c := v.(*callerTx)
	now := c.s.clock.Now()
	prepared, err := store.PrepareJobs(jobs, now)
	if err != nil {
		return nil, err
	}
	store.TraceContext(ctx, prepared)
	var res []store.Enqueued
	failed, err := c.t.inSavepoint(ctx, func() error {
		var err error
		res, err = insertJobs(ctx, c.t, prepared, now)
		return err
	})
	if err = cmp.Or(failed, err); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	*c.enqueued = *c.enqueued || store.Inserted(res)
	return res, nil
}

// EnqueueFanInTx enqueues f in tx, a transaction of Store.Tx, as
// Store.EnqueueFanIn does: f's members, f itself, or nothing when a fan-in
// of its key exists. A failed call leaves tx as it was.
func EnqueueFanInTx(ctx context.Context, tx *sql.Tx, f store.NewFanIn) (store.FanInEnqueued, error) {
	v, ok := callerTxs.Load(tx)
	if !ok {
		return store.FanInEnqueued{}, errors.New("enqueue fan-in: not a transaction of Store.Tx")
	}
	c := v.(*callerTx)
	now := c.s.clock.Now()
	specs, jobs, err := store.PrepareNewFanIn(f, now)
	if err != nil {
		return store.FanInEnqueued{}, err
	}
	var res store.FanInEnqueued
	var fired bool
	failed, err := c.t.inSavepoint(ctx, func() error {
		var err error
		res, fired, err = store.EnqueueFanInTx(ctx, c.s.Base, c.t, specs, jobs, now)
		return err
	})
	if err = cmp.Or(failed, err); err != nil {
		return store.FanInEnqueued{}, fmt.Errorf("enqueue fan-in %q: %w", specs[0].Key, err)
	}
	*c.enqueued = *c.enqueued || store.Inserted(res.Jobs) || fired
	return res, nil
}
