package queue

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// hotSQL lists the statements prepared once at Open on the writer
// connection: parsing SQL was the largest cost of a claim or completion
// before they were.
var hotSQL = []string{
	insertJobSQL, jobIDByKeySQL, insertBatchSQL, jobIDsByKeySQL, activeSeriesSQL, insertSkipSQL,
	cursorSQL, insertCursorSQL, moveCursorSQL, moveCursorsSQL,
	doneHeldSQL, finishRetrySQL, finishDeadSQL, finishReleasedSQL, insertAttemptsSQL,
	heartbeatSQL, expiredSQL, reclaimJobSQL, reclaimAttemptSQL, nextWakeSQL,
	savepointSQL, rollbackToSQL, releaseSQL,
}

// cacheable reports whether a statement not prepared at Open is worth
// preparing once and keeping: the claim statements and their look-ahead, one
// text per limit, and the completion statements, one text per group size.
func cacheable(query string) bool {
	return strings.HasPrefix(query, claimPrefix) || strings.HasPrefix(query, finishDonePrefix) ||
		strings.HasPrefix(query, claimWindowPrefix)
}

const claimPrefix = "UPDATE jobs SET state = 'running', attempt = attempt + 1,"

// prepare fills q.stmts. It must run before any transaction: with a single
// writer connection, preparing on the DB while a transaction holds that
// connection would wait for ever.
func (q *Queue) prepare(ctx context.Context) error {
	q.stmts = make(map[string]*sql.Stmt, len(hotSQL))
	for _, s := range hotSQL {
		st, err := q.w.PrepareContext(ctx, s)
		if err != nil {
			return fmt.Errorf("prepare %.40q: %w", s, err)
		}
		q.stmts[s] = st
	}
	return nil
}

// cached returns a statement prepared at Open.
func (q *Queue) cached(query string) *sql.Stmt {
	q.stmtMu.RLock()
	defer q.stmtMu.RUnlock()
	return q.stmts[query]
}

// txn is a write transaction whose statements come from the queue's
// prepared ones where it has them. A cacheable statement it lacks is
// prepared in the transaction this once and noted in misses, for inTx to
// prepare and keep once the connection is free again.
type txn struct {
	*sql.Tx
	q      *Queue
	misses *[]string
}

func (t txn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	t.q.stmtMu.RLock()
	st, ok := t.q.stmts[query]
	t.q.stmtMu.RUnlock()
	if ok {
		return t.Tx.StmtContext(ctx, st), nil
	}
	if t.misses != nil && cacheable(query) {
		*t.misses = append(*t.misses, query)
	}
	return t.Tx.PrepareContext(ctx, query)
}

// keep prepares queries on the writer and caches them. It must not run
// inside a transaction (see prepare).
func (q *Queue) keep(ctx context.Context, queries []string) {
	for _, query := range queries {
		q.stmtMu.RLock()
		_, ok := q.stmts[query]
		q.stmtMu.RUnlock()
		if ok {
			continue
		}
		st, err := q.w.PrepareContext(ctx, query)
		if err != nil {
			return // the next transaction prepares it inline again
		}
		q.stmtMu.Lock()
		if _, ok := q.stmts[query]; ok {
			st.Close()
		} else {
			q.stmts[query] = st
		}
		q.stmtMu.Unlock()
	}
}

// PrepareContext returns the statement bound to the transaction; closing it
// leaves the cached statement prepared.
func (t txn) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return t.stmt(ctx, query)
}

func (t txn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (t txn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (t txn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, query)
	if err != nil {
		// A *sql.Row cannot be built with an error outside database/sql;
		// the unprepared path reports the same error on Scan.
		return t.Tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}
