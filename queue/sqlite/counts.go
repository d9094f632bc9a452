package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"scheduler/queue/store"
)

// countSQL adds a transaction's change to one count of job_counts.
const countSQL = `INSERT INTO job_counts (type, state, n) VALUES (?1, ?2, ?3)
ON CONFLICT (type, state) DO UPDATE SET n = n + excluded.n`

// countInserts pauses, for the rest of the transaction, the trigger that
// counts each inserted job, so that the transaction counts its inserts in
// counts instead (countInserted): one upsert per type rather than one per
// job. Pausing and resuming are two statements, so a transaction pauses
// only to insert many jobs (insertJobs: batchRows or more). It must run
// outside any savepoint that may be rolled back, or the pause could be
// undone while counts still holds inserts; writeCounts fails the
// transaction if it was.
func (t txn) countInserts(ctx context.Context) error {
	if *t.countsInserts {
		return nil
	}
	if _, err := t.exec(ctx, pauseCountingSQL); err != nil {
		return fmt.Errorf("pause the insert count trigger: %w", err)
	}
	*t.countsInserts = true
	return nil
}

// countInserted counts a job of type typ the transaction inserted, unless
// the trigger counted it.
func (t txn) countInserted(typ string) {
	if *t.countsInserts {
		t.counts.Add(typ, store.StatePending, 1)
	}
}

const (
	pauseCountingSQL  = `INSERT INTO job_counts_paused (id) VALUES (1)`
	resumeCountingSQL = `DELETE FROM job_counts_paused`
)

// writeCounts writes the transaction's count changes, one statement per
// (type, state) that changed: a pool's trip of hundreds of jobs writes four
// rows, a tick of thousands of jobs one per type. It resumes the insert
// trigger if countInserts paused it.
func (t txn) writeCounts(ctx context.Context) error {
	if *t.countsInserts {
		res, err := t.exec(ctx, resumeCountingSQL)
		if err != nil {
			return fmt.Errorf("resume the insert count trigger: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			// A rollback to a savepoint undid the pause: the trigger
			// counted inserts that counts holds too.
			return fmt.Errorf("resume the insert count trigger: %d rows, %v: the pause was undone", n, err)
		}
	}
	if len(t.counts) == 0 {
		return nil
	}
	for _, d := range t.counts.Sorted() {
		if _, err := t.exec(ctx, countSQL, d.Type, string(d.State), d.N); err != nil {
			return fmt.Errorf("count jobs: %w", err)
		}
	}
	return nil
}

// moveTypes reads the type of each row a statement RETURNING type changed
// and records the rows as moved from one state to another, or deleted when
// to is empty, and returns how many; it closes rows.
func (t txn) moveTypes(rows *sql.Rows, err error, from, to store.State) (int64, error) {
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		var typ string
		if err := rows.Scan(&typ); err != nil {
			return n, err
		}
		if to == "" {
			t.counts.Add(typ, from, -1)
		} else {
			t.counts.Move(typ, from, to, 1)
		}
		n++
	}
	return n, rows.Err()
}

// countsSQL reads the job counts. A count whose jobs all moved on stays
// as a row of 0.
const countsSQL = `SELECT state, type, n FROM job_counts WHERE n != 0`
