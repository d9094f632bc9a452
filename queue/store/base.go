package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// Base is what every engine shares: the flow of reads and writes over its
// Statements and Backend. An engine embeds a *Base, which implements most of
// Engine, and adds its own enqueues, pool transaction and watch.
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

// Backend is what an engine gives Base: connections, transactions, and the
// steps it takes its own way.
type Backend interface {
	// Reader runs statements outside a write transaction.
	Reader() Querier
	// InTx runs fn in one write transaction, writes fn's count changes
	// (Tx.Counts), and commits; durable asks to survive power loss, where the
	// engine lets a write choose.
	InTx(ctx context.Context, durable bool, fn func(Tx) error) error
	// InsertJobs inserts and counts prepared jobs (see PrepareJobs) in tx.
	InsertJobs(ctx context.Context, tx Tx, jobs []NewJob, now time.Time) ([]Enqueued, error)
	// InsertSkips records skips in tx.
	InsertSkips(ctx context.Context, tx Tx, skips []Skip, now time.Time) error
	// LockCursors locks schedules' cursors by name for an AdvanceBatch; an
	// engine whose writers hold the whole database need not.
	LockCursors(ctx context.Context, tx Tx, schedules []string) error
	// MoveCursors compares and moves advs' cursors (running schedules moving
	// on) and returns the schedules it moved.
	MoveCursors(ctx context.Context, tx Tx, advs []*Advance, now time.Time) (map[string]bool, error)
	// Reclaim takes back and counts the leases ending before expired.
	Reclaim(ctx context.Context, tx Tx, now, expired time.Time) ([]Reclaimed, error)
	// PurgeDone deletes and counts up to n done jobs finished before before,
	// keeping their keys used.
	PurgeDone(ctx context.Context, tx Tx, before time.Time, n int) (int64, error)
	// LockMaintenance takes the right to maintain the database; ok is false
	// when another process holds it.
	LockMaintenance(ctx context.Context) (unlock func(), ok bool, err error)
	// Purged runs after a purge, for the engine's own upkeep.
	Purged(ctx context.Context) error
	// Text makes s a text the engine stores as it is.
	Text(s string) string
	// Notify tells other processes of a commit that made a job ready, or,
	// with cancel, that asked a running job to stop.
	Notify(cancel bool)
}

// PurgeConfig tunes the purge of Maintain.
type PurgeConfig struct {
	Batch int // rows deleted per transaction
	// Pause is the rest between full batches, at least as long as the last,
	// so other processes' writers get their turn. Zero: none.
	Pause time.Duration
}

// NewBase returns the Base of an engine running q's statements on b.
func NewBase(b Backend, q *Statements, c clock.Clock, log *slog.Logger, purge PurgeConfig) *Base {
	return &Base{b: b, q: q, clock: c, leases: NewLeases(c), log: log, purge: purge, waiters: map[chan struct{}]struct{}{}}
}

// Subscribe returns a channel that receives a coalesced value after each
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

// The functions below are for the engine embedding the Base: as functions,
// they do not become its methods.

// Wake tells e's subscribers and other processes that a commit made a job
// ready.
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

func (e *Base) capText(s string) string { return e.b.Text(CapText(s)) }

func (e *Base) latestLease(ctx context.Context, q Querier) func() (time.Time, error) {
	return func() (time.Time, error) {
		var t Time
		if err := q.QueryRow(ctx, e.q.LatestLease).Scan(&t); err != nil {
			return time.Time{}, err
		}
		return t.Time, nil
	}
}

// Expired returns the instant before which a lease has expired at now, as e's
// Leases judge it across clock steps.
func Expired(ctx context.Context, e *Base, q Querier, now time.Time) (time.Time, error) {
	margin, err := e.leases.Margin(now, e.latestLease(ctx, q))
	if err != nil {
		return time.Time{}, err
	}
	return now.Add(-margin), nil
}

// WakeTimes runs query on q for when the next job a pool takes becomes ready
// and when another owner's earliest lease ends (see Leases).
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

// ReadyAfter runs query on q for the earliest run_at it selects, or zero.
func ReadyAfter(ctx context.Context, q Querier, query string, args ...any) (time.Time, error) {
	var r Time
	if err := q.QueryRow(ctx, query, args...).Scan(&r); err != nil {
		return time.Time{}, fmt.Errorf("next ready: %w", err)
	}
	return r.Time, nil
}
