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

// writeCounts writes the transaction's count changes, one statement per
// (type, state) that changed: a pool's trip of hundreds of jobs writes four
// rows.
func (t txn) writeCounts(ctx context.Context) error {
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
