package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"scheduler/clock"
)

// serverClock is the store's clock: the given clock corrected by its
// measured offset to the database server's clock, so that nodes whose own
// clocks differ write and compare the same instants (leases, cursors,
// run_at). After is the given clock's: durations are not corrected.
type serverClock struct {
	base   clock.Clock
	offset atomic.Int64 // server minus base, in nanoseconds
}

func (c *serverClock) Now() time.Time {
	return c.base.Now().Add(time.Duration(c.offset.Load()))
}

func (c *serverClock) After(d time.Duration) <-chan time.Time { return c.base.After(d) }

func (c *serverClock) Monotonic() time.Duration { return c.base.Monotonic() }

// clockSamples is how many round trips one measurement makes; the one
// answered fastest bounds the error best (by half its round trip).
const clockSamples = 3

// measure sets the offset from a few round trips of clock_timestamp(),
// taking the server's reading as the midpoint of the fastest one.
func (c *serverClock) measure(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	best := time.Duration(-1)
	var offset time.Duration
	for range clockSamples {
		var server time.Time
		t0 := c.base.Now()
		if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
			return err
		}
		t1 := c.base.Now()
		rtt := t1.Sub(t0)
		if best < 0 || rtt < best {
			best = rtt
			offset = server.Sub(t0.Add(rtt / 2))
		}
	}
	c.offset.Store(int64(offset))
	return nil
}

// clockEvery is how often the store measures the server's clock again:
// both clocks drift, and either may be stepped.
const clockEvery = time.Minute

// followClock measures the server's clock every clockEvery until Close.
func (s *Store) followClock() {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-s.stop:
			return
		case <-s.cfg.Clock.After(clockEvery):
		}
		if err := s.clock.measure(ctx, s.pool); err != nil && ctx.Err() == nil {
			s.log.Warn("measure the database server's clock", "err", err)
		}
	}
}
