package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Enqueue adds a job unless one with the same key exists, in which case it
// inserts nothing and returns the existing job's id, or existed and was
// purged since (Enqueued.Purged). The commit is fsynced before Enqueue
// returns.
func (s *Store) Enqueue(ctx context.Context, j store.NewJob) (store.Enqueued, error) {
	res, err := s.EnqueueBatch(ctx, []store.NewJob{j})
	if err != nil {
		return store.Enqueued{}, err
	}
	return res[0], nil
}

// EnqueueBatch enqueues jobs in one transaction: all or none. Results are in
// the order of jobs. Calls from many goroutines at once share transactions
// (see group.go); each returns once its jobs are committed.
func (s *Store) EnqueueBatch(ctx context.Context, jobs []store.NewJob) ([]store.Enqueued, error) {
	now := s.clock.Now()
	prepared, err := store.PrepareJobs(jobs, now)
	if err != nil {
		return nil, err
	}
	if s.w == nil {
		return nil, fmt.Errorf("enqueue: %w", errReadOnly)
	}
	return s.enqueueGrouped(&enqueueCall{ctx: ctx, jobs: prepared, now: now, done: make(chan struct{}), turn: make(chan struct{})})
}

// generatedKeyGlob matches the keys store.RandomKey makes, and no key of a
// schedule's jobs (those have at least two '|'). Purge does not keep them
// in used_keys: nothing can enqueue the same one again.
var generatedKeyGlob = "job|" + strings.Repeat("[0-9a-f]", 32)

// insertJobSQL inserts a job unless its key is used: by a job (the unique
// key) or by one since purged (used_keys, one look-up of its primary key).
// Whether it did, and the new job's id, come from the count of changed rows
// and the last rowid (insertedID) rather than from a RETURNING, which SQLite
// answers through a table of its own.
const insertJobSQL = `INSERT INTO jobs (key, type, payload, state, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, version)
SELECT ?1, ?2, ?3, 'pending', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11
WHERE NOT EXISTS (SELECT 1 FROM used_keys WHERE key = ?1)
ON CONFLICT (key) DO NOTHING`

// inserted reads the result of an insert of jobs: how many rows it
// inserted and the last rowid, which is the last of them when there are
// any. The count of changed rows leaves out the trigger's rows, and the
// last rowid is the job's once the trigger has run.
func inserted(r sql.Result) (n, last int64, err error) {
	if n, err = r.RowsAffected(); err != nil || n == 0 {
		return n, 0, err
	}
	last, err = r.LastInsertId()
	return n, last, err
}

// insertedID reads the result of insertJobSQL: the new job's id, or false
// when the key was used.
func insertedID(r sql.Result) (int64, bool, error) {
	n, id, err := inserted(r)
	return id, err == nil && n == 1, err
}

const jobIDByKeySQL = `SELECT id FROM jobs WHERE key = ?`

const activeSeriesSQL = `SELECT 1 FROM jobs
WHERE schedule = ? AND item = ? AND state IN ('pending', 'running') AND schedule IS NOT NULL
LIMIT 1`

const insertSkipSQL = `INSERT INTO skips (schedule, item, scheduled_at, reason, recorded_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`

// batchRows is how many jobs one multi-row INSERT carries. Larger batches
// insert in statements of this size (prepared once), the rest row by row.
const batchRows = 100

const jobValues = "(?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?)"

// insertBatchSQL inserts batchRows jobs in one statement, those whose key
// is used excepted (see insertJobSQL). It has no RETURNING, for speed:
// SQLite keeps the rows a RETURNING returns in a table of their own before
// the first one reaches Go, and a tick of 10,000 schedules took 5 to 10%
// more time with it. insertBatch works out the ids instead.
var insertBatchSQL = `INSERT INTO jobs (key, type, payload, state, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, version)
SELECT * FROM (VALUES ` + strings.TrimSuffix(strings.Repeat(jobValues+",\n", batchRows), ",\n") + `) AS v
WHERE NOT EXISTS (SELECT 1 FROM used_keys u WHERE u.key = v.column1)
ON CONFLICT (key) DO NOTHING`

// lastJobIDSQL reads the largest job id, from the end of the table.
const lastJobIDSQL = `SELECT coalesce(max(id), 0) FROM jobs`

// jobsAfterSQL reads the jobs with an id past one: those a statement
// inserted, when the id is the largest before it.
const jobsAfterSQL = `SELECT id, key FROM jobs WHERE id > ?`

const jobIDsByKeySQL = `SELECT id, key FROM jobs WHERE key IN (SELECT value FROM json_each(?))`

// insertJobs inserts prepared jobs inside tx, in order: a later job with the
// key of an earlier one is not inserted, and SkipIfActive sees the jobs
// inserted before it. A run of jobs without SkipIfActive goes in statements
// of batchRows; the rest of the run, and jobs with SkipIfActive (each needs
// its own look-up first), go row by row.
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

// testHookInsert, when set by a test, is called before each row insertRows
// inserts; an error fails the insert there.
var testHookInsert func(store.NewJob) error

// insertRows inserts jobs one statement each.
func insertRows(ctx context.Context, tx txn, jobs []store.NewJob, now time.Time) ([]store.Enqueued, error) {
	ins, err := tx.stmt(ctx, insertJobSQL)
	if err != nil {
		return nil, err
	}
	defer ins.Close()
	var byKey, active, skip *sql.Stmt
	res := make([]store.Enqueued, len(jobs))
	for i, j := range jobs {
		res[i].Key = j.Key
		if testHookInsert != nil {
			if err := testHookInsert(j); err != nil {
				return nil, err
			}
		}
		if j.SkipIfActive {
			if active == nil {
				if active, err = tx.stmt(ctx, activeSeriesSQL); err != nil {
					return nil, err
				}
				defer active.Close()
				if skip, err = tx.stmt(ctx, insertSkipSQL); err != nil {
					return nil, err
				}
				defer skip.Close()
			}
			var one int
			err := active.QueryRowContext(ctx, j.Schedule, j.Item).Scan(&one)
			if err == nil {
				if _, err := skip.ExecContext(ctx, j.Schedule, j.Item, ms(j.ScheduledAt), store.SkipOverlap, ms(now)); err != nil {
					return nil, fmt.Errorf("record skip of %q: %w", j.Key, err)
				}
				res[i].Skipped = true
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("check overlap of %q: %w", j.Key, err)
			}
		}
		r, err := ins.ExecContext(ctx, j.Key, j.Type, string(j.Payload), j.MaxAttempts, j.Priority,
			ms(j.RunAt), nullStr(j.Schedule), j.Item, nullMS(j.ScheduledAt), ms(now), j.Version)
		if err == nil {
			res[i].ID, res[i].Inserted, err = insertedID(r)
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("insert job %q: %w", j.Key, err)
		case res[i].Inserted:
			tx.countInserted(j.Type)
		default:
			if byKey == nil {
				if byKey, err = tx.stmt(ctx, jobIDByKeySQL); err != nil {
					return nil, err
				}
				defer byKey.Close()
			}
			err := byKey.QueryRowContext(ctx, j.Key).Scan(&res[i].ID)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				res[i].Purged = true // the key is in used_keys
			case err != nil:
				return nil, fmt.Errorf("look up existing job %q: %w", j.Key, err)
			}
		}
	}
	return res, nil
}

// insertBatch inserts batchRows jobs (without SkipIfActive) with one
// statement, and looks up the ids of those whose key existed.
//
// A new job's id is one past the largest id of the table (SQLite gives a
// row without one the largest rowid plus one until the largest possible),
// and the statement inserts its rows in the order of its VALUES. So when
// every job went in (the count of changed rows says so) and the last id is
// the largest before plus their number, the jobs took the ids after it in
// their order. Otherwise the jobs with an id past it are those inserted.
func insertBatch(ctx context.Context, tx txn, jobs []store.NewJob, now time.Time) ([]store.Enqueued, error) {
	args := make([]any, 0, len(jobs)*11)
	for _, j := range jobs {
		args = append(args, j.Key, j.Type, string(j.Payload), j.MaxAttempts, j.Priority, ms(j.RunAt),
			nullStr(j.Schedule), j.Item, nullMS(j.ScheduledAt), ms(now), j.Version)
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
	ids, err := keyedIDs(ctx, tx, jobsAfterSQL, before)
	if err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	inserted := make(map[string]int64, len(ids))
	maps.Copy(inserted, ids)
	res := make([]store.Enqueued, len(jobs))
	var missing []string
	for i, j := range jobs {
		res[i].Key = j.Key
		if id, ok := inserted[j.Key]; ok {
			res[i].ID, res[i].Inserted = id, true
			tx.countInserted(j.Type)
			delete(inserted, j.Key) // a repeat of the key later in jobs was not inserted
			ids[j.Key] = id
			continue
		}
		if id, ok := ids[j.Key]; ok {
			res[i].ID = id
			continue
		}
		missing = append(missing, j.Key)
	}
	if len(missing) == 0 {
		return res, nil
	}
	arg, err := json.Marshal(missing)
	if err != nil {
		return nil, err
	}
	existing, err := keyedIDs(ctx, tx, jobIDsByKeySQL, string(arg))
	if err != nil {
		return nil, fmt.Errorf("look up existing jobs: %w", err)
	}
	for i := range res {
		if !res[i].Inserted && res[i].ID == 0 {
			// Neither inserted nor a job: the key is in used_keys.
			res[i].ID, res[i].Purged = existing[res[i].Key], existing[res[i].Key] == 0
		}
	}
	return res, nil
}

// keyedIDs runs a query returning (id, key) rows.
func keyedIDs(ctx context.Context, tx txn, query string, args ...any) (map[string]int64, error) {
	rows, err := tx.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id int64
		var key string
		if err := rows.Scan(&id, &key); err != nil {
			return nil, err
		}
		out[key] = id
	}
	return out, rows.Err()
}

const cursorSQL = `SELECT at, paused FROM cursors WHERE schedule = ?`

const insertCursorSQL = `INSERT INTO cursors (schedule, at, updated_at) VALUES (?, ?, ?)`

const moveCursorSQL = `UPDATE cursors SET at = ?, updated_at = ? WHERE schedule = ? AND at = ?`

const resumeCursorSQL = `UPDATE cursors SET at = ?, paused = 0, paused_at = NULL, updated_at = ?
WHERE schedule = ? AND at = ? AND paused = 1`

// Advance inserts a.Jobs (idempotently, by key) and a.Skips and moves the
// schedule's cursor from a.From to a.To, in one transaction. If the stored
// cursor is not a.From (another beat moved it) or its pause state is not
// a.Paused (it was paused or resumed meanwhile), nothing is written and the
// error is ErrCursorMoved: the pause is part of the compare-and-set, so a
// beat that read before a pause commits nothing after it. The commit is not
// fsynced unless a.Resume: a power loss rolls the rows back together with
// the cursor, so they are materialised again under the same keys; a resume
// is acknowledged to a person.
func (s *Store) Advance(ctx context.Context, a store.Advance) ([]store.Enqueued, error) {
	if err := store.CheckAdvance(a); err != nil {
		return nil, err
	}
	now := s.clock.Now()
	jobs, err := store.PrepareJobs(a.Jobs, now)
	if err != nil {
		return nil, fmt.Errorf("advance %s: %w", a.Schedule, err)
	}
	var res []store.Enqueued
	err = s.inTx(ctx, a.Resume, func(tx txn) error {
		if err := casCursor(ctx, tx, a, now); err != nil {
			return err
		}
		if res, err = insertJobs(ctx, tx, jobs, now); err != nil {
			return err
		}
		return insertSkips(ctx, tx, a.Skips, now)
	})
	if err != nil {
		return nil, fmt.Errorf("advance %s: %w", a.Schedule, err)
	}
	if len(jobs) > 0 {
		s.notify()
	}
	return res, nil
}

// casCursor moves a's cursor from a.From to a.To inside tx, or creates it
// at a.To when a.From is zero, if the stored cursor is a.From with the pause
// state a.Paused; otherwise it writes nothing and returns ErrCursorMoved.
func casCursor(ctx context.Context, tx txn, a store.Advance, now time.Time) error {
	var at int64
	var paused bool
	err := tx.queryRow(ctx, cursorSQL, a.Schedule).Scan(&at, &paused)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if !a.From.IsZero() || a.Paused {
			return store.ErrCursorMoved
		}
		_, err := tx.exec(ctx, insertCursorSQL, a.Schedule, ms(a.To), ms(now))
		return err
	case err != nil:
		return err
	}
	if a.From.IsZero() || at != ms(a.From) {
		return store.ErrCursorMoved
	}
	if paused != a.Paused {
		return store.ErrPausedMoved
	}
	move := moveCursorSQL
	if a.Resume {
		move = resumeCursorSQL
	}
	_, err = tx.exec(ctx, move, ms(a.To), ms(now), a.Schedule, at)
	return err
}

func insertSkips(ctx context.Context, tx txn, skips []store.Skip, now time.Time) error {
	if len(skips) == 0 {
		return nil
	}
	st, err := tx.stmt(ctx, insertSkipSQL)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, s := range skips {
		if _, err := st.ExecContext(ctx, s.Schedule, s.Item, ms(s.ScheduledAt), s.Reason, ms(now)); err != nil {
			return fmt.Errorf("record skip: %w", err)
		}
	}
	return nil
}

const cursorsSQL = `SELECT schedule, at, paused, paused_at FROM cursors`

// cursorsByNameSQL walks the table in the order of its primary key: no
// sort. The names' BINARY collation is byte order.
const cursorsByNameSQL = cursorsSQL + ` ORDER BY schedule`

// Cursors returns every schedule's cursor, by schedule name.
func (s *Store) Cursors(ctx context.Context) (map[string]store.Cursor, error) {
	return store.CollectCursors(func(yield func(store.Cursor) bool) error {
		return s.eachCursor(ctx, cursorsSQL, yield)
	})
}

// CursorsByName calls yield with every schedule's cursor, in the byte order
// of the schedules' names, as it reads them, until yield returns false.
func (s *Store) CursorsByName(ctx context.Context, yield func(store.Cursor) bool) error {
	return s.eachCursor(ctx, cursorsByNameSQL, yield)
}

// eachCursor calls yield with each cursor query reads, in one snapshot,
// until yield returns false.
func (s *Store) eachCursor(ctx context.Context, query string, yield func(store.Cursor) bool) error {
	rows, err := s.r.QueryContext(ctx, query)
	if err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c store.Cursor
		var at int64
		var pausedAt sql.NullInt64
		if err := rows.Scan(&c.Schedule, &at, &c.Paused, &pausedAt); err != nil {
			return fmt.Errorf("read cursors: %w", err)
		}
		c.At = time.UnixMilli(at).UTC()
		c.PausedAt = fromMS(pausedAt)
		if !yield(c) {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	return nil
}

const setPausedSQL = `INSERT INTO cursors (schedule, at, paused, paused_at, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (schedule) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at, updated_at = excluded.updated_at`

// SetPaused pauses or resumes a schedule durably. A schedule without a cursor
// gets one at now.
func (s *Store) SetPaused(ctx context.Context, schedule string, paused bool) error {
	now := s.clock.Now()
	pausedAt := sql.NullInt64{}
	if paused {
		pausedAt = nullMS(now)
	}
	err := s.inTx(ctx, true, func(tx txn) error {
		_, err := tx.exec(ctx, setPausedSQL, schedule, ms(now), paused, pausedAt, ms(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("set paused %s: %w", schedule, err)
	}
	return nil
}
