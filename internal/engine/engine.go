// Package engine opens the queue on the engine a database name picks:
// PostgreSQL for a postgres:// or postgresql:// URL, else a SQLite file.
// It alone knows both engines; package queue knows neither.
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

// Config configures Open. Zero values select the defaults shown. Fields
// below Logger apply to SQLite only, except ReadOnly and PurgeBatch.
type Config struct {
	// Clock is the queue's clock; on PostgreSQL it is corrected to the
	// server's. Default: clock.Real{}.
	Clock  clock.Clock
	Logger *slog.Logger // Default: discard.

	BusyTimeout time.Duration // How long SQLite's busy handler waits for a lock. Default: 5s.
	// WriteWait bounds a write transaction's wait for its turn among the
	// file's writers; past it the write fails. Default: 2m.
	WriteWait time.Duration
	// ReadOnly opens the database for reads only: no migration, no writes.
	ReadOnly bool
	// PurgeBatch is the rows one purge transaction deletes, few enough
	// that a waiting writer waits briefly. Default: 1000.
	PurgeBatch int
	// PurgePause is the rest between purge transactions, at least as long
	// as the last one, so that other processes' writers, whose busy
	// handlers poll, get the lock. Default: 20ms; negative: none.
	PurgePause time.Duration
}

// Open opens the queue at dsn, a PostgreSQL URL or a SQLite file's path,
// creating or migrating it. A database of a newer schema is refused
// (store.ErrSchemaTooNew).
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

// IsPostgres reports whether dsn is a postgres:// or postgresql:// URL,
// in any case.
func IsPostgres(dsn string) bool {
	for _, scheme := range []string{"postgres://", "postgresql://"} {
		if len(dsn) >= len(scheme) && strings.EqualFold(dsn[:len(scheme)], scheme) {
			return true
		}
	}
	return false
}
