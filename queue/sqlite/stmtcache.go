package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The statement cache is for throughput: parsing costs more than running a
// claim or a completion, so every statement of a write transaction is
// prepared once on the writer and kept.

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
// keeping: claims, one text per limit, and completions, per group size.
func cacheable(query string) bool {
	return strings.HasPrefix(query, claimPrefix) || strings.HasPrefix(query, finishDonePrefix) ||
		strings.HasPrefix(query, claimWindowPrefix)
}

const claimPrefix = "UPDATE jobs SET state = 'running', attempt = attempt + 1,"

// prepare fills s.stmts before any transaction: preparing on the one writer
// connection while a transaction holds it would wait for ever.
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

// txn is a write transaction on the writer, using cached statements. One it
// lacks is prepared in place and noted in misses, for inTx to keep.
type txn struct {
	tx     *sql.Tx
	s      *Store
	misses *[]string
	counts store.CountDeltas // job_counts changes, written by inTx before commit
	tail   *countTail        // what it knows of the count mark
}

// stmt returns query prepared in the transaction, from the cache if it can;
// closing it leaves the cached one.
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

// keep prepares queries on the writer and caches them, outside a transaction
// (see prepare).
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

func (t txn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (t txn) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (t txn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, query)
	if err != nil {
		// No *sql.Row carries an error: the unprepared path reports it.
		return t.tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// readStmt returns query prepared on the readers at first use: a pool reads
// when to wake at most turns, and parsing costs as much as reading.
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
