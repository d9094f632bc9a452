package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The adapters below run the shared flow's statements (store.Querier) on the
// readers and the writer, through the statement cache.

// args turns the flow's arguments into the file's: instants to Unix
// milliseconds, lists to JSON arrays (for json_each), copying in first.
func args(in []any) []any {
	out := in
	for i, a := range in {
		var v any
		switch a := a.(type) {
		case time.Time:
			v = a.UnixMilli()
		case []string:
			v = jsonText(a)
		case []int64:
			v = idsText(a)
		default:
			continue
		}
		if &out[0] == &in[0] {
			out = append([]any(nil), in...)
		}
		out[i] = v
	}
	return out
}

func jsonText[T any](v []T) string {
	if len(v) == 0 {
		return "[]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "[]"
	}
	return string(b)
}

// idsText is ids as a JSON array, without reflection.
func idsText(ids []int64) string {
	b := make([]byte, 0, 8*len(ids)+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

type rows struct{ *sql.Rows }

func (r rows) Close() { r.Rows.Close() }

// row is *sql.Row as store.Row: no row is store.ErrNoRows.
type row struct{ *sql.Row }

func (r row) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNoRows
	}
	return err
}

func wrap(r *sql.Rows, err error) (store.Rows, error) {
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

func affected(r sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// reader runs statements on the readers, each prepared once.
type reader struct{ s *Store }

func (r reader) Query(ctx context.Context, query string, a ...any) (store.Rows, error) {
	st, err := r.s.readStmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return wrap(st.QueryContext(ctx, args(a)...))
}

func (r reader) QueryRow(ctx context.Context, query string, a ...any) store.Row {
	st, err := r.s.readStmt(ctx, query)
	if err != nil {
		return row{r.s.r.QueryRowContext(ctx, query, args(a)...)} // reports the same error
	}
	return row{st.QueryRowContext(ctx, args(a)...)}
}

func (r reader) Exec(ctx context.Context, query string, a ...any) (int64, error) {
	return 0, errReadOnly
}

func (t txn) Query(ctx context.Context, query string, a ...any) (store.Rows, error) {
	return wrap(t.query(ctx, query, args(a)...))
}

func (t txn) QueryRow(ctx context.Context, query string, a ...any) store.Row {
	return row{t.queryRow(ctx, query, args(a)...)}
}

func (t txn) Exec(ctx context.Context, query string, a ...any) (int64, error) {
	return affected(t.exec(ctx, query, args(a)...))
}

func (t txn) Counts() store.CountDeltas { return t.counts }

// inTx runs fn in one IMMEDIATE transaction on the writer, in the write turn,
// writes its count changes, and commits. durable commits with
// synchronous=FULL, for writes acknowledged outside the process.
func (s *Store) inTx(ctx context.Context, durable bool, fn func(tx txn) error) (err error) {
	if s.w == nil {
		return errReadOnly
	}
	var misses []string
	defer func() {
		// After the connection is released below: preparing needs it.
		if len(misses) > 0 {
			s.keep(context.WithoutCancel(ctx), misses)
		}
	}()
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if durable {
		if _, err := conn.ExecContext(ctx, "PRAGMA synchronous=FULL"); err != nil {
			return err
		}
		defer func() {
			// The connection is reused: restore the default regardless.
			if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous=NORMAL"); rerr != nil && err == nil {
				err = rerr
			}
		}()
	}
	unlock, err := s.turn.lock(ctx, s.cfg.WriteWait)
	if err != nil {
		return err
	}
	defer unlock()
	stx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	tx := txn{tx: stx, s: s, misses: &misses, counts: store.CountDeltas{}, tail: &countTail{inserted: map[string]int64{}}}
	if err := fn(tx); err != nil {
		tx.tx.Rollback()
		return err
	}
	if err := tx.writeCounts(ctx); err != nil {
		tx.tx.Rollback()
		return err
	}
	return tx.tx.Commit()
}

type backend struct{ s *Store }

var _ store.Backend = backend{}

func (b backend) Reader() store.Querier { return reader(b) }

func (b backend) InTx(ctx context.Context, durable bool, fn func(store.Tx) error) error {
	return b.s.inTx(ctx, durable, func(tx txn) error { return fn(tx) })
}

func (b backend) InsertJobs(ctx context.Context, tx store.Tx, jobs []store.NewJob, now time.Time) ([]store.Enqueued, error) {
	return insertJobs(ctx, tx.(txn), jobs, now)
}

func (b backend) InsertSkips(ctx context.Context, tx store.Tx, skips []store.Skip, now time.Time) error {
	return insertSkips(ctx, tx.(txn), skips, now)
}

// LockCursors locks nothing: the write turn holds the whole file.
func (b backend) LockCursors(context.Context, store.Tx, []string) error { return nil }

func (b backend) MoveCursors(ctx context.Context, tx store.Tx, advs []*store.Advance, now time.Time) (map[string]bool, error) {
	return moveCursors(ctx, tx.(txn), advs, now)
}

// Reclaim settles the fan-ins of the jobs it ends; a fan-in it fires wakes
// the pools with the jobs it reclaimed.
func (b backend) Reclaim(ctx context.Context, tx store.Tx, now, expired time.Time) ([]store.Reclaimed, error) {
	f := store.FanInDeltas{}
	rs, err := reclaim(ctx, tx.(txn), now, expired, f)
	if err != nil || len(f) == 0 {
		return rs, err
	}
	_, err = store.SettleFanIns(ctx, b.s.Base, tx, f, now)
	return rs, err
}

func (b backend) PurgeDone(ctx context.Context, tx store.Tx, before time.Time, n int) (int64, error) {
	return purgeDone(ctx, tx.(txn), before, n)
}

// LockMaintenance always succeeds: the file's writers take turns.
func (b backend) LockMaintenance(context.Context) (func(), bool, error) { return func() {}, true, nil }

func (b backend) Purged(ctx context.Context) error { return b.s.Checkpoint(ctx) }

func (b backend) Text(s string) string { return s }

// Notify tells this store's watches of a cancel request: they pass over its
// own commits. Other processes see every commit by their file watch.
func (b backend) Notify(cancel bool) {
	if cancel {
		b.s.signalCancel()
	}
}

var errReadOnly = errors.New("database opened read-only")
