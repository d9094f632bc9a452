// Package engine opens the queue on the storage engine that a database
// name picks: a PostgreSQL database for a URL starting postgres:// or
// postgresql://, otherwise a SQLite file. It is the one place of the
// program that knows both engines; package queue knows neither.
package engine

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// Config configures the engine Open opens and the Client on it. Zero
// values select the defaults shown. The settings below Logger apply to a
// SQLite file (see package github.com/scheduler-run/scheduler/queue/sqlite),
// except ReadOnly and PurgeBatch, which apply to both engines.
type Config struct {
	// Clock is the clock the queue decides with. On PostgreSQL it is
	// corrected to the database server's clock, so that nodes agree.
	// Default: clock.Real{}.
	Clock  clock.Clock
	Logger *slog.Logger // Default: discard.

	BusyTimeout time.Duration // How long SQLite's busy handler waits for a lock. Default: 5s.
	// WriteWait bounds how long a write transaction waits for its turn
	// among the processes writing the file; past it the write fails with
	// an error saying so. Default: 2m.
	WriteWait time.Duration
	// ReadOnly opens the database for reads only: no migration, no writes.
	ReadOnly bool
	// PurgeBatch is how many rows one purge transaction deletes: small
	// enough that a writer waiting behind it waits briefly. Default: 1000.
	PurgeBatch int
	// PurgePause is the rest between two purge transactions, at least as
	// long as the transaction took, so that writers of other processes,
	// whose busy handlers poll, get the lock. Default: 20ms; negative: none.
	PurgePause time.Duration
}

// Open opens the queue at dsn: a PostgreSQL database for a URL starting
// postgres:// or postgresql://, otherwise a SQLite file's path. Either is
// created or migrated as needed, and a database written by a newer schema
// is refused (store.ErrSchemaTooNew).
func Open(ctx context.Context, dsn string, cfg Config) (*queue.Client, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	qcfg := queue.Config{Logger: cfg.Logger}
	if IsPostgres(dsn) {
		// The scheme in lower case: pgx reads a URL only so.
		scheme, rest, _ := strings.Cut(dsn, "://")
		dsn = strings.ToLower(scheme) + "://" + rest
		s, err := postgres.Open(ctx, dsn, postgres.Config{Clock: cfg.Clock, Logger: cfg.Logger, PurgeBatch: cfg.PurgeBatch, ReadOnly: cfg.ReadOnly})
		if err != nil {
			return nil, err
		}
		return queue.New(s, qcfg)
	}
	s, err := sqlite.Open(ctx, dsn, sqlite.Config{
		Clock: cfg.Clock, Logger: cfg.Logger, BusyTimeout: cfg.BusyTimeout, WriteWait: cfg.WriteWait,
		ReadOnly: cfg.ReadOnly, PurgeBatch: cfg.PurgeBatch, PurgePause: cfg.PurgePause,
	})
	if err != nil {
		return nil, err
	}
	return queue.New(s, qcfg)
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
