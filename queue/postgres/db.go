package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The adapters below run the shared flow's statements (store.Querier).

// querier is the pool, a connection, or a transaction, the store's or a
// caller's (EnqueueTx).
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// args truncates the flow's instants to the millisecond (see ts), copying in
// first.
func args(in []any) []any {
	out := in
	for i, a := range in {
		t, ok := a.(time.Time)
		if !ok {
			continue
		}
		if &out[0] == &in[0] {
			out = append([]any(nil), in...)
		}
		out[i] = ts(t)
	}
	return out
}

type row struct{ pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNoRows
	}
	return err
}

// txn runs the flow's statements on q; in a transaction, counts are its job
// count changes, written before commit.
type txn struct {
	q      querier
	counts store.CountDeltas
}

func (t txn) Query(ctx context.Context, sql string, a ...any) (store.Rows, error) {
	rows, err := t.q.Query(ctx, sql, args(a)...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (t txn) QueryRow(ctx context.Context, sql string, a ...any) store.Row {
	return row{t.q.QueryRow(ctx, sql, args(a)...)}
}

func (t txn) Exec(ctx context.Context, sql string, a ...any) (int64, error) {
	tag, err := t.q.Exec(ctx, sql, args(a)...)
	return tag.RowsAffected(), err
}

func (t txn) Counts() store.CountDeltas { return t.counts }

// inTx runs fn in a transaction, writing its count changes before commit.
func (s *Store) inTx(ctx context.Context, fn func(tx txn) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t := txn{q: tx, counts: store.CountDeltas{}}
		if err := fn(t); err != nil {
			return err
		}
		return writeCounts(ctx, tx, t.counts)
	})
}

type backend struct{ s *Store }

var _ store.Backend = backend{}

func (b backend) Reader() store.Querier { return txn{q: b.s.pool} }

// InTx runs fn in a transaction, as durable as the server's settings.
func (b backend) InTx(ctx context.Context, durable bool, fn func(store.Tx) error) error {
	return b.s.inTx(ctx, func(tx txn) error { return fn(tx) })
}

func (b backend) InsertJobs(ctx context.Context, tx store.Tx, jobs []store.NewJob, now time.Time) ([]store.Enqueued, error) {
	t := tx.(txn)
	return insertJobs(ctx, t.q, t.counts, jobs, ts(now))
}

func (b backend) InsertSkips(ctx context.Context, tx store.Tx, skips []store.Skip, now time.Time) error {
	return insertSkips(ctx, tx.(txn).q, skips, ts(now))
}

func (b backend) LockCursors(ctx context.Context, tx store.Tx, schedules []string) error {
	_, err := tx.Exec(ctx, lockCursorsSQL, schedules)
	return err
}

func (b backend) MoveCursors(ctx context.Context, tx store.Tx, advs []*store.Advance, now time.Time) (map[string]bool, error) {
	return moveCursors(ctx, tx.(txn).q, advs, ts(now))
}

// Reclaim settles the fan-ins of the jobs it ends; a fan-in it fires wakes
// the pools with the jobs it reclaimed.
func (b backend) Reclaim(ctx context.Context, tx store.Tx, now, expired time.Time) ([]store.Reclaimed, error) {
	t := tx.(txn)
	f := store.FanInDeltas{}
	rs, err := collectReclaimed(t.counts, f, store.Read(t.Query(ctx, reclaimSQL, now, expired)))
	if err != nil || len(f) == 0 {
		return rs, err
	}
	_, err = store.SettleFanIns(ctx, b.s.Base, tx, f, now)
	return rs, err
}

func (b backend) PurgeDone(ctx context.Context, tx store.Tx, before time.Time, n int) (int64, error) {
	return store.MoveTypes(store.Read(tx.Query(ctx, purgeDoneSQL, before, n)), tx.Counts(), store.StateDone, "")
}

func (b backend) LockMaintenance(ctx context.Context) (func(), bool, error) {
	return b.s.lockMaintenance(ctx)
}

func (b backend) Purged(context.Context) error { return nil }

func (b backend) Text(s string) string { return cleanText(s) }

// Notify sends a NOTIFY to every node's watch; a cancel's reaches this
// store's own too.
func (b backend) Notify(cancel bool) {
	if cancel {
		b.s.notifyCancel()
		return
	}
	b.s.notify()
}
