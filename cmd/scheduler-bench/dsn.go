package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"scheduler/queue"
)

// errNoPostgres is what opening a PostgreSQL database gives in a build
// without the PostgreSQL engine.
var errNoPostgres = errors.New("PostgreSQL support: not in this build")

// isDSN reports whether db is a PostgreSQL URL, the form queue.Open takes
// for PostgreSQL, rather than a SQLite file's path.
func isDSN(db string) bool {
	for _, s := range []string{"postgres://", "postgresql://"} {
		if len(db) >= len(s) && strings.EqualFold(db[:len(s)], s) {
			return true
		}
	}
	return false
}

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
// one place this program calls queue.Open.
func openQueue(ctx context.Context, db string, cfg queue.Config) (*queue.Queue, error) {
	if !isDSN(db) {
		return queue.Open(ctx, db, cfg)
	}
	q, err := openPostgres(ctx, db, cfg)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", redactDSN(db), err)
	}
	return q, nil
}

// openPostgres opens the PostgreSQL database dsn. Until queue.Open opens
// PostgreSQL, it refuses: queue.Open would take the URL for a file's path.
// Once it does, this is queue.Open.
func openPostgres(context.Context, string, queue.Config) (*queue.Queue, error) {
	return nil, errNoPostgres
}
