package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/scheduler-run/scheduler/clock"
)

// serverClock is the store's clock: the server's as last measured, carried on
// by the base's monotonic clock, so nodes write and compare the same instants
// whatever their own clocks. Measurements every clockEvery follow drift and
// steps. After and Monotonic are the base's.
type serverClock struct {
	base clock.Clock
	at   atomic.Pointer[serverReading] // nil until the first measurement
}

// serverReading is the server's clock as read at the base's mono.
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

// clockSamples is the round trips per measurement; the fastest bounds the
// error, by half its round trip.
const clockSamples = 3

// measure reads clock_timestamp() a few times, taking the fastest read as
// made at its midpoint.
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

// clockEvery is how often the server's clock is measured again.
const clockEvery = time.Minute

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
