package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The flow reads and writes rows through the interfaces below, which an
// engine implements over its driver. It stores a time.Time argument as its
// instants (to the millisecond), a []string or []int64 as a list.

// Rows is a result being read, as *sql.Rows and pgx.Rows are.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is a read of one row. Scan returns ErrNoRows when there is none.
type Row interface {
	Scan(dest ...any) error
}

// ErrNoRows is returned by Row.Scan when the read found no row.
var ErrNoRows = errors.New("no rows in result set")

// Querier runs statements on a reader connection or in a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) Row
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
}

// Tx is a write transaction: its statements, and their job count changes,
// which the engine writes before the commit.
type Tx interface {
	Querier
	Counts() CountDeltas
}

// Reading is a query's result and error: Read(q.Query(ctx, ...)).
type Reading struct {
	rows Rows
	err  error
}

// Read holds a query's result for Collect or Each.
func Read(rows Rows, err error) Reading { return Reading{rows, err} }

// Collect reads every row of r with scan, and closes it.
func Collect[T any](r Reading, scan func(Row) (T, error)) ([]T, error) {
	var out []T
	err := r.Each(func(row Row) (bool, error) {
		v, err := scan(row)
		out = append(out, v)
		return true, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Each calls fn with r's rows until fn returns false or an error, and closes
// r.
func (r Reading) Each(fn func(Row) (bool, error)) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	for r.rows.Next() {
		more, err := fn(r.rows)
		if err != nil || !more {
			return err
		}
	}
	return r.rows.Err()
}

// MoveTypes records each row's type (RETURNING type) in d as moved from from
// to to, or deleted for an empty to; it returns the count.
func MoveTypes(r Reading, d CountDeltas, from, to State) (int64, error) {
	var n int64
	err := r.Each(func(r Row) (bool, error) {
		var typ string
		if err := r.Scan(&typ); err != nil {
			return false, err
		}
		if to == "" {
			d.Add(typ, from, -1)
		} else {
			d.Move(typ, from, to, 1)
		}
		n++
		return true, nil
	})
	return n, err
}

// Time scans an instant as stored: Unix milliseconds (SQLite), a timestamp
// (PostgreSQL), or NULL for the zero time.
type Time struct{ time.Time }

// Scan implements sql.Scanner.
func (t *Time) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		t.Time = time.Time{}
	case int64:
		t.Time = time.UnixMilli(v).UTC()
	case time.Time:
		t.Time = v.UTC()
	default:
		return fmt.Errorf("scan instant: %T", src)
	}
	return nil
}

var _ sql.Scanner = (*Time)(nil)

// OrNull is t as a nullable instant argument: nil for the zero time.
func OrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// TextOrNull is s as a nullable text argument: nil for "".
func TextOrNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// CapText caps an attempt's error or output at MaxOutput bytes, keeping head
// and tail.
func CapText(s string) string {
	if len(s) > MaxOutput {
		return s[:MaxOutput/2] + "\n…\n" + s[len(s)-MaxOutput/2:]
	}
	return s
}
