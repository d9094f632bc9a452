package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// Config configures a Queue. Zero values select the defaults shown. The
// settings below Logger apply to a SQLite file (see package
// github.com/scheduler-run/scheduler/queue/sqlite), except ReadOnly and PurgeBatch, which apply to
// both engines.
type Config struct {
	// Clock is the clock the queue decides with. On PostgreSQL it is
	// corrected to the database server's clock (see package
	// github.com/scheduler-run/scheduler/queue/postgres), so that nodes agree. Default: clock.Real{}.
	Clock  clock.Clock
	Logger *slog.Logger // Default: discard.

	BusyTimeout time.Duration // How long SQLite's busy handler waits for a lock. Default: 5s.
	// WriteWait bounds how long a write transaction waits for its turn
	// among the processes writing the file; past it the write fails with
	// an error saying so. Default: 2m.
	WriteWait time.Duration
	// ReadOnly opens the database for reads only: no migration, no writes.
	// It applies to both engines.
	ReadOnly bool
	// PurgeBatch is how many rows one purge transaction deletes: small
	// enough that a writer waiting behind it waits milliseconds.
	// Default: 1000.
	PurgeBatch int
	// PurgePause is the rest between two purge transactions, at least as
	// long as the transaction took, so that writers of other processes,
	// whose busy handlers poll, get the lock. Default: 20ms; negative: none.
	PurgePause time.Duration

	noFileWatch bool // tests force the poll of PoolConfig.WatchInterval
}

// Queue is a job queue kept by a Store. It is safe for concurrent use by
// many goroutines; Pools run its jobs. The Store's operations are the
// Queue's (q.Enqueue, q.List, ...).
type Queue struct {
	Store
	clock clock.Clock
	log   *slog.Logger
}

// Open opens the queue at dsn: a PostgreSQL database for a URL starting
// postgres:// or postgresql://, otherwise a SQLite file's path. Either is
// created or migrated as needed, and a database written by a newer schema is
// refused (ErrSchemaTooNew).
func Open(ctx context.Context, dsn string, cfg Config) (*Queue, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if IsPostgres(dsn) {
		// The scheme in lower case: pgx reads a URL only so.
		scheme, rest, _ := strings.Cut(dsn, "://")
		dsn = strings.ToLower(scheme) + "://" + rest
		s, err := postgres.Open(ctx, dsn, postgres.Config{Clock: cfg.Clock, Logger: cfg.Logger, PurgeBatch: cfg.PurgeBatch, ReadOnly: cfg.ReadOnly})
		if err != nil {
			return nil, err
		}
		return New(s, cfg.Logger), nil
	}
	s, err := sqlite.Open(ctx, dsn, sqlite.Config{
		Clock: cfg.Clock, Logger: cfg.Logger, BusyTimeout: cfg.BusyTimeout, WriteWait: cfg.WriteWait,
		ReadOnly: cfg.ReadOnly, PurgeBatch: cfg.PurgeBatch, PurgePause: cfg.PurgePause,
		NoFileWatch: cfg.noFileWatch,
	})
	if err != nil {
		return nil, err
	}
	return New(s, cfg.Logger), nil
}

// IsPostgres reports whether dsn names a PostgreSQL database (a URL
// starting postgres:// or postgresql://, in any case) rather than a SQLite
// file.
func IsPostgres(dsn string) bool {
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		if len(dsn) >= len(scheme) && strings.EqualFold(dsn[:len(scheme)], scheme) {
			return true
		}
	}
	return false
}

// New returns a Queue over s, logging to logger (nil: discard). Closing
// the Queue closes s.
func New(s Store, logger *slog.Logger) *Queue {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Queue{Store: s, clock: s.Clock(), log: logger}
}

// Backup writes a consistent copy of the database to path, safe while
// pools run. path must not exist. Only a SQLite store can; others return
// ErrUnsupported.
func (q *Queue) Backup(ctx context.Context, path string) error {
	b, ok := q.Store.(interface {
		Backup(ctx context.Context, path string) error
	})
	if !ok {
		return fmt.Errorf("backup of %s: %w (use the database's own backup tools)", q.Name(), ErrUnsupported)
	}
	return b.Backup(ctx, path)
}

// errNoStore is returned by NewPool for a Queue without a Store.
var errNoStore = errors.New("new pool: queue has no store")
