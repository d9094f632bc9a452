package queuetest

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue"
)

// jobsInTxSQL reads the jobs a transaction sees, in either engine's schema:
// the columns a Want compares, newest first.
const jobsInTxSQL = `SELECT id, key, type, payload, state, COALESCE(schedule, ''), item FROM jobs ORDER BY id DESC`

// RequireEnqueuedSQLiteTx is RequireEnqueued inside tx, a transaction of
// sqlite.Store.Tx not yet committed: it sees what the transaction
// enqueued with sqlite.EnqueueTx. The returned job has the fields a Want
// compares.
func RequireEnqueuedSQLiteTx(t TB, tx *sql.Tx, want Want) *queue.Job {
	t.Helper()
	rows, err := tx.QueryContext(context.Background(), jobsInTxSQL)
	if err != nil {
		t.Fatalf("read jobs in the transaction: %v", err)
	}
	defer rows.Close()
	return requireIn(t, readJobs(t, rows), want)
}

// RequireEnqueuedPostgresTx is RequireEnqueued inside tx, a transaction on
// the queue's database (its schema in search_path) not yet committed: it
// sees what the transaction enqueued with postgres.EnqueueTx. The
// returned job has the fields a Want compares.
func RequireEnqueuedPostgresTx(t TB, tx pgx.Tx, want Want) *queue.Job {
	t.Helper()
	rows, err := tx.Query(context.Background(), jobsInTxSQL)
	if err != nil {
		t.Fatalf("read jobs in the transaction: %v", err)
	}
	defer rows.Close()
	return requireIn(t, readJobs(t, rows), want)
}

// jobRows is what *sql.Rows and pgx.Rows both offer.
type jobRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// readJobs reads every row of jobsInTxSQL, failing t on an error.
func readJobs(t TB, rows jobRows) []*queue.Job {
	t.Helper()
	var jobs []*queue.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			t.Fatalf("read jobs in the transaction: %v", err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read jobs in the transaction: %v", err)
	}
	return jobs
}

func scanJob(rows interface{ Scan(dest ...any) error }) (*queue.Job, error) {
	var j queue.Job
	var payload, state string
	if err := rows.Scan(&j.ID, &j.Key, &j.Type, &payload, &state, &j.Schedule, &j.Item); err != nil {
		return nil, err
	}
	j.Payload, j.State = []byte(payload), queue.State(state)
	return &j, nil
}

// requireIn fails t unless one of jobs, newest first, matches want, and
// returns the newest match.
func requireIn(t TB, jobs []*queue.Job, want Want) *queue.Job {
	t.Helper()
	m := matcher(t, want)
	var ofType []*queue.Job
	for _, j := range jobs {
		if m(j) {
			return j
		}
		if (want.Type == "" || j.Type == want.Type) && len(ofType) < 10 {
			ofType = append(ofType, j)
		}
	}
	t.Fatalf("no job enqueued in the transaction matching %s%s", want, listed(ofType, want.Type))
	return nil
}
