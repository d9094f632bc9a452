package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// Config configures a Client. Zero values select the defaults shown.
type Config struct {
	Logger *slog.Logger // Default: discard.
}

// Client is the queue as a program uses it: it enqueues, reads jobs and
// schedules, and acts as an operator does; NewPool runs the jobs. It is safe
// for concurrent use. Its methods are the engine's roles a program plays (see
// package github.com/scheduler-run/scheduler/queue/store); the pool's
// protocol is the pool's alone. To enqueue in a transaction of your own, use
// the engine's EnqueueTx.
type Client struct {
	store.Producer         // enqueue
	store.JobViews         // jobs, attempts, counts, pools
	store.ScheduleViews    // the schedules' jobs, skips, alarms, configuration
	store.Operator         // retry, cancel, the running configuration
	store.BeatProtocol     // the schedules' cursors, for package schedule
	store.AlarmProtocol    // the alarms' evaluation, for package schedule
	store.IncidentOperator // acknowledge, silence, the incidents

	engine store.Engine
	clock  clock.Clock
	log    *slog.Logger
}

// New returns a Client on the engine e. Closing the Client closes e.
func New(e store.Engine, cfg Config) (*Client, error) {
	if e == nil {
		return nil, errors.New("new client: no engine")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{Producer: e, JobViews: e, ScheduleViews: e, Operator: e, BeatProtocol: e, AlarmProtocol: e,
		IncidentOperator: e, engine: e, clock: e.Clock(), log: cfg.Logger}, nil
}

// Engine returns c's engine, for code playing a role the Client does not
// offer (a test standing in for a pool).
func (c *Client) Engine() store.Engine { return c.engine }

// Name says where the rows are: a file's path, or a database's address
// without its password.
func (c *Client) Name() string { return c.engine.Name() }

// Clock is the engine's clock (on PostgreSQL, the server's).
func (c *Client) Clock() clock.Clock { return c.clock }

// Ping fails when the database cannot be read. It is cheap.
func (c *Client) Ping(ctx context.Context) error { return c.engine.Ping(ctx) }

// Close closes the engine. Pools using c must have returned from Run.
func (c *Client) Close() error { return c.engine.Close() }

// Backup writes a consistent copy of the database to path, which must not
// exist, while pools run. Only SQLite can; others return ErrUnsupported.
func (c *Client) Backup(ctx context.Context, path string) error {
	b, ok := c.engine.(interface {
		Backup(ctx context.Context, path string) error
	})
	if !ok {
		return fmt.Errorf("backup of %s: %w (use the database's own backup tools)", c.Name(), ErrUnsupported)
	}
	return b.Backup(ctx, path)
}
