package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// Base is the part of an engine that is the same on every engine: the flow
// of its reads and writes, in terms of the statements the engine gives it
// (Statements), run on its connections and in its transactions (Backend).
// An engine embeds a *Base, whose methods implement most of Engine, and
// adds what it does its own way: enqueues, the pool's transaction and
// wake-ups, the watch, and whatever it shadows for speed.
type Base struct {
	b      Backend
	q      *Statements
	clock  clock.Clock
	leases *Leases
	log    *slog.Logger
	purge  PurgeConfig

	mu      sync.Mutex
	waiters map[chan struct{}]struct{}
}

// Backend is what an engine gives Base: its connections and transactions,
// and the few steps of a flow that it takes its own way.
type Backend interface {
	// Reader runs statements outside a write transaction.
	Reader() Querier
	// InTx runs fn in one write transaction, writes the job counts fn
	// changed (Tx.Counts), and commits. durable asks for a commit that
	// survives a power loss, where the engine lets a write choose.
	InTx(ctx context.Context, durable bool, fn func(Tx) error) error
	// InsertJobs inserts prepared jobs (see PrepareJobs) in tx, as
	// EnqueueBatch does, and counts them in tx.
	InsertJobs(ctx context.Context, tx Tx, jobs []NewJob, now time.Time) ([]Enqueued, error)
	// InsertSkips records skips in tx.
	InsertSkips(ctx context.Context, tx Tx, skips []Skip, now time.Time) error
	// LockCursors locks the cursors of schedules, sorted by name, for
	// the compare-and-sets of an AdvanceBatch; an engine whose writers
	// hold the whole database need not.
	LockCursors(ctx context.Context, tx Tx, schedules []string) error
	// MoveCursors compares and moves the cursors of advs, each of a
	// running schedule moving on, in tx, and returns the schedules whose
	// cursor it moved.
	MoveCursors(ctx context.Context, tx Tx, advs []*Advance, now time.Time) (map[string]bool, error)
	// Reclaim takes back, in tx, the leases that end before expired, as at
	// now, and counts the jobs it moves in tx.
	Reclaim(ctx context.Context, tx Tx, now, expired time.Time) ([]Reclaimed, error)
	// PurgeDone deletes up to n done jobs finished before before, keeps
	// their keys used, and counts them in tx; it returns how many.
	PurgeDone(ctx context.Context, tx Tx, before time.Time, n int) (int64, error)
	// LockMaintenance takes the right to maintain the database, for
	// Maintain; ok is false when another process holds it. unlock gives
	// it back.
	LockMaintenance(ctx context.Context) (unlock func(), ok bool, err error)
	// Purged runs after a purge, for the engine's own upkeep.
	Purged(ctx context.Context) error
	// Text makes s a text the engine stores as it is.
	Text(s string) string
	// Notify tells the other processes on the database of a commit that
	// made a job ready, or, with cancel, that asked a running job to stop.
	Notify(cancel bool)
}

// PurgeConfig tunes the purge of Maintain.
type PurgeConfig struct {
	Batch int // rows deleted per transaction
	// Pause is the rest between two full batches, at least as long as the
	// batch took, so that the writers of other processes get their turn.
	// Zero: none.
	Pause time.Duration
}

// NewBase returns the Base of an engine that runs q's statements on b,
// decides with c, and logs to log.
func NewBase(b Backend, q *Statements, c clock.Clock, log *slog.Logger, purge PurgeConfig) *Base {
	return &Base{b: b, q: q, clock: c, leases: NewLeases(c), log: log, purge: purge, waiters: map[chan struct{}]struct{}{}}
}

// Subscribe returns a channel that receives a value (coalesced) after each
// commit of this engine that makes a job ready, and a func that removes it.
func (e *Base) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	e.mu.Lock()
	e.waiters[ch] = struct{}{}
	e.mu.Unlock()
	return ch, func() {
		e.mu.Lock()
		delete(e.waiters, ch)
		e.mu.Unlock()
	}
}

// The functions below are the Base's for the engine that embeds it: as
// functions, not methods, they are not the engine's methods.

// Wake tells the subscribers of e's engine, and the other processes on
// the database, that a commit made a job ready.
func Wake(e *Base) {
	e.mu.Lock()
	for ch := range e.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	e.mu.Unlock()
	e.b.Notify(false)
}

// capText caps s (see CapText) as the engine stores it.
func (e *Base) capText(s string) string { return e.b.Text(CapText(s)) }

// latestLease reads the latest end of a running job's lease on q, for
// Leases.Margin.
func (e *Base) latestLease(ctx context.Context, q Querier) func() (time.Time, error) {
	return func() (time.Time, error) {
		var t Time
		if err := q.QueryRow(ctx, e.q.LatestLease).Scan(&t); err != nil {
			return time.Time{}, err
		}
		return t.Time, nil
	}
}

// Expired returns the instant before which a lease has expired at now, as
// e's Leases judge it across steps of its clock, reading on q when they
// must.
func Expired(ctx context.Context, e *Base, q Querier, now time.Time) (time.Time, error) {
	margin, err := e.leases.Margin(now, e.latestLease(ctx, q))
	if err != nil {
		return time.Time{}, err
	}
	return now.Add(-margin), nil
}

// WakeTimes reads, on q, query and its args: when the next job a pool
// takes becomes ready, and when the earliest lease of another owner ends,
// which it moves to when reclaim takes it (see Leases).
func WakeTimes(ctx context.Context, e *Base, q Querier, query string, args ...any) (ready, lease time.Time, err error) {
	now := e.clock.Now()
	expired, err := Expired(ctx, e, q, now)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("next wake: %w", err)
	}
	var r, l Time
	if err := q.QueryRow(ctx, query, args...).Scan(&r, &l); err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("next wake: %w", err)
	}
	if !l.IsZero() {
		l.Time = l.Add(now.Sub(expired))
	}
	return r.Time, l.Time, nil
}

// ReadyAfter reads, on q, query and its args: the earliest run_at of the
// jobs it selects; zero when none.
func ReadyAfter(ctx context.Context, q Querier, query string, args ...any) (time.Time, error) {
	var r Time
	if err := q.QueryRow(ctx, query, args...).Scan(&r); err != nil {
		return time.Time{}, fmt.Errorf("next ready: %w", err)
	}
	return r.Time, nil
}
