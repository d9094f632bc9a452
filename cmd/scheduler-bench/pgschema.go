package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgSchemas gives each configuration of a run on PostgreSQL a schema of its
// own, created before the configuration runs and dropped after it, as
// peerbench gives each of its runs a database: one configuration's rows,
// dead row versions and autovacuum never slow another's, and a run leaves
// nothing behind. The queue's engine creates its tables in the first schema
// of the connection's search_path, which the DSN it gets names.
//
// This is the only SQL the program runs itself: administration of the
// schemas, and reading back the server's synchronous_commit for the info
// lines. The benchmark proper goes through the queue API.
type pgSchemas struct {
	base   string // the DSN given with -dsn
	prefix string // unique to this process: scheduler_bench_<pid>_<unix ns>
	n      atomic.Int64
}

func newPGSchemas(dsn string) *pgSchemas {
	return &pgSchemas{base: dsn, prefix: fmt.Sprintf("scheduler_bench_%d_%d", os.Getpid(), time.Now().UnixNano())}
}

// notIdent matches what may not appear in an unquoted schema name.
var notIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// dropTimeout bounds the DROP SCHEMA of a configuration, which runs also
// after the run's context is cancelled (Ctrl-C, SIGTERM).
const dropTimeout = 30 * time.Second

// create makes the schema of cfg and returns the DSN that puts it first in
// the search_path (pgx sends search_path as a run-time parameter of every
// connection), the server's synchronous_commit, and a function that drops
// the schema and all it holds. The queues on it must be closed before drop.
func (p *pgSchemas) create(ctx context.Context, cfg string) (dsn, syncCommit string, drop func() error, err error) {
	schema := p.prefix + "_" + strings.Trim(notIdent.ReplaceAllString(strings.ToLower(cfg), "_"), "_") +
		fmt.Sprintf("_%d", p.n.Add(1))
	conn, err := pgx.Connect(ctx, p.base)
	if err != nil {
		return "", "", nil, fmt.Errorf("database %s: %w", redactDSN(p.base), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", "", nil, fmt.Errorf("database %s: create schema: %w", redactDSN(p.base), err)
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropTimeout)
		defer cancel()
		conn, err := pgx.Connect(ctx, p.base)
		if err != nil {
			return fmt.Errorf("drop schema %s: %w", schema, err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			return fmt.Errorf("drop schema %s: %w", schema, err)
		}
		return nil
	}
	if err := conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&syncCommit); err != nil {
		return "", "", nil, errors.Join(fmt.Errorf("database %s: %w", redactDSN(p.base), err), drop())
	}
	u, err := url.Parse(p.base)
	if err != nil {
		return "", "", nil, errors.Join(fmt.Errorf("database %s: %w", redactDSN(p.base), err), drop())
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), syncCommit, drop, nil
}
