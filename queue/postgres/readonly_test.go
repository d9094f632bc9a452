package postgres_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestReadOnlyOpenCost: a read-only open, which every operator's command
// makes (-status among them), connects once and reads the schema in two
// round transactions: a fresh backend's first statements are what -status waits
// for most, so none is prepared that runs once, and none reads the views
// of information_schema, slow to plan.
func TestReadOnlyOpenCost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	w, err := postgres.Open(ctx, dsn, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Enqueue(ctx, store.NewJob{Type: "t", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	w.Close()

	c := &countingTracer{}
	r, err := postgres.OpenWith(ctx, dsn, postgres.Config{ReadOnly: true, LocalClock: true}, func(cc *pgx.ConnConfig) {
		dial := cc.DialFunc
		cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: conn, writes: &c.writes}, nil
		}
		cc.Tracer = c
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := c.connects.Load(); n != 1 {
		t.Errorf("read-only Open made %d connections, want 1", n)
	}
	if n := c.writes.Load() - c.afterConnect.Load(); n != 2 {
		t.Errorf("read-only Open made %d round transactions after connecting (%d statements), want 2", n, c.queries.Load())
	}
	if j, err := r.JobByKey(ctx, "k"); err != nil || j.Key != "k" {
		t.Fatalf("JobByKey after a read-only Open = %v, %v", j, err)
	}
}

// countingTracer counts the connections made, the statements run, and
// the writes to the server made until the last connection was made.
type countingTracer struct {
	connects, queries, writes, afterConnect atomic.Int64
}

func (c *countingTracer) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	return ctx
}

func (c *countingTracer) TraceConnectEnd(_ context.Context, d pgx.TraceConnectEndData) {
	if d.Err == nil {
		c.connects.Add(1)
		c.afterConnect.Store(c.writes.Load())
	}
}

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return ctx
}

func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countingConn counts its writes: one per round transaction of the protocol.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}
