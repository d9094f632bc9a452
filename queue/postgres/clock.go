package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/scheduler-run/scheduler/clock"
)

// serverClock is the store's clock: the database server's, as last
// measured, carried forward by the given clock's monotonic clock, so that
// nodes whose own clocks differ write and compare the same instants
// (leases, cursors, run_at). A step of the node's wall clock moves none of
// it; the measurements, every clockEvery, follow the server's clock as the
// two drift apart, or as the server's is stepped. After and Monotonic are
// the given clock's.
type serverClock struct {
	base clock.Clock
	at   atomic.Pointer[serverReading] // nil until the first measurement
}

// serverReading is one measurement: the server's clock read when the
// base's monotonic clock read mono.
type serverReading struct {
	server time.Time
	mono   time.Duration
}

func (c *serverClock) Now() time.Time {
	r := c.at.Load()
	if r == nil {
		return c.base.Now()
	}
	return r.server.Add(c.base.Monotonic() - r.mono)
}

func (c *serverClock) After(d time.Duration) <-chan time.Time { return c.base.After(d) }

func (c *serverClock) Monotonic() time.Duration { return c.base.Monotonic() }

// clockSamples is how many round trips one measurement makes; the one
// answered fastest bounds the error best (by half its round trip).
const clockSamples = 3

// measure reads the server's clock in a few round trips of
// clock_timestamp(), taking its reading as made at the midpoint of the
// fastest one, by the monotonic clock.
func (c *serverClock) measure(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	best := time.Duration(-1)
	var r serverReading
	for range clockSamples {
		var server time.Time
		m0 := c.base.Monotonic()
		if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
			return err
		}
		rtt := c.base.Monotonic() - m0
		if best < 0 || rtt < best {
			best = rtt
			r = serverReading{server: server, mono: m0 + rtt/2}
		}
	}
	c.at.Store(&r)
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
