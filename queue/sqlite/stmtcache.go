package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The statement cache exists for throughput: parsing SQL costs more than
// running a claim or a completion, so the statements are prepared once on
// the writer connection and kept. Every statement of a write transaction
// goes through it (txn's exec, query and queryRow).

// hotSQL lists the statements prepared once at Open on the writer
// connection.
var hotSQL = []string{
	insertJobSQL, insertBatchSQL, lastJobIDSQL, jobsAfterSQL, jobIDsByKeySQL, activeSeriesSQL, insertSkipSQL,
	cursorSQL, insertCursorSQL, moveCursorSQL, moveCursorsSQL, moveCursorsCountSQL,
	casSavepointSQL, casRollbackToSQL, casReleaseSQL,
	doneHeldSQL, finishRetrySQL, finishDeadSQL, finishReleasedSQL, insertAttemptsSQL,
	heartbeatSQL, expiredSQL, reclaimJobSQL, reclaimAttemptSQL,
	savepointSQL, rollbackToSQL, releaseSQL, countSQL, countMarkSQL, tailCountsSQL, moveCountMarkSQL,
	rateCandidatesSQL, rateBucketsSQL, rateWriteSQL, claimIDsSQL,
}

// cacheable reports whether a statement not prepared at Open is worth
// preparing once and keeping: the claim statements and their look-ahead, one
// text per limit, and the completion statements, one text per group size.
func cacheable(query string) bool {
	return strings.HasPrefix(query, claimPrefix) || strings.HasPrefix(query, finishDonePrefix) ||
		strings.HasPrefix(query, claimWindowPrefix)
}

const claimPrefix = "UPDATE jobs SET state = 'running', attempt = attempt + 1,"

// prepare fills s.stmts. It must run before any transaction: with a single
// writer connection, preparing on the DB while a transaction holds that
// connection would wait for ever.
func (s *Store) prepare(ctx context.Context) error {
	s.stmts = make(map[string]*sql.Stmt, len(hotSQL))
	for _, q := range hotSQL {
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %.40q: %w", q, err)
		}
		s.stmts[q] = st
	}
	return nil
}

// txn is a write transaction on the writer connection whose statements come
// from the statement cache where it has them. A cacheable statement it lacks
// is prepared in the transaction this once and noted in misses, for inTx to
// prepare and keep once the connection is free again.
type txn struct {
	tx     *sql.Tx
	s      *Store
	misses *[]string
	// counts are the transaction's changes to job_counts, by its inserts,
	// UPDATE and DELETE statements, written by inTx before the commit.
	counts store.CountDeltas
	// tail is what the transaction knows of the count mark (see
	// countPastMark).
	tail *countTail
}

// stmt returns query prepared in the transaction, from the cache if it can.
// Closing it leaves the cached statement prepared.
func (t txn) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	t.s.stmtMu.RLock()
	st, ok := t.s.stmts[query]
	t.s.stmtMu.RUnlock()
	if ok {
		return t.tx.StmtContext(ctx, st), nil
	}
	if t.misses != nil && cacheable(query) {
		*t.misses = append(*t.misses, query)
	}
	return t.tx.PrepareContext(ctx, query)
}

// keep prepares queries on the writer and caches them. It must not run
// inside a transaction (see prepare).
func (s *Store) keep(ctx context.Context, queries []string) {
	for _, query := range queries {
		s.stmtMu.RLock()
		_, ok := s.stmts[query]
		s.stmtMu.RUnlock()
		if ok {
			continue
		}
		st, err := s.w.PrepareContext(ctx, query)
		if err != nil {
			return // the next transaction prepares it inline again
		}
		s.stmtMu.Lock()
		if _, ok := s.stmts[query]; ok {
			st.Close()
		} else {
			s.stmts[query] = st
		}
		s.stmtMu.Unlock()
	}
}

// exec runs a statement from the cache in the transaction.
func (t txn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// query runs a query from the cache in the transaction.
func (t txn) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow runs a one-row query from the cache in the transaction.
func (t txn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, query)
	if err != nil {
		// A *sql.Row cannot be built with an error outside database/sql;
		// the unprepared path reports the same error on Scan.
		return t.tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// readStmt returns query prepared on the readers, preparing it the first
// time. It exists for speed: a pool's loop looks at when to wake next
// (NextWake, NextReadyAfter) at most of its turns, and parsing that SQL
// again each time cost as much as running it. Only those fixed texts go
// through it.
func (s *Store) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.stmtMu.RLock()
	st, ok := s.readStmts[query]
	s.stmtMu.RUnlock()
	if ok {
		return st, nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.readStmts[query]; ok {
		return st, nil
	}
	st, err := s.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.readStmts == nil {
		s.readStmts = map[string]*sql.Stmt{}
	}
	s.readStmts[query] = st
	return st, nil
}
