package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
)

// isDSN reports whether db is a PostgreSQL URL, the form engine.Open takes
// for PostgreSQL, rather than a SQLite file's path.
func isDSN(db string) bool { return engine.IsPostgres(db) }

// redactDSN is db without the password of its user information, for
// messages. (The scheduler command's own, in package cli, also reads a
// password= parameter and malformed URLs; here the URL comes from the
// person running the benchmark.)
func redactDSN(db string) string {
	scheme, rest, ok := strings.Cut(db, "://")
	if !ok {
		return db
	}
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	at := strings.LastIndex(rest[:end], "@")
	colon := strings.Index(rest[:max(at, 0)], ":")
	if at < 0 || colon < 0 {
		return db
	}
	return scheme + "://" + rest[:colon+1] + "xxxxx" + rest[at:]
}

// openQueue opens the queue at db, a file's path or a PostgreSQL URL: the
// one place this program calls engine.Open.
func openQueue(ctx context.Context, db string, cfg engine.Config) (*queue.Client, error) {
	if !isDSN(db) {
		return engine.Open(ctx, db, cfg)
	}
	q, err := engine.Open(ctx, db, cfg)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", redactDSN(db), err)
	}
	return q, nil
}
