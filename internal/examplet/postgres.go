package examplet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
)

// Main runs a package's tests and examples and returns m.Run's code, for
// its TestMain. The examples that pattern (a -test.skip pattern) names use
// PostgreSQL: an example cannot skip, so where SCHEDULER_TEST_POSTGRES is
// unset they are left out with -test.skip, and pkg says so, as a test would
// skip. With it set, the schemas PostgresURL made are dropped at the end.
func Main(m *testing.M, pkg, pattern string) int {
	flag.Parse()
	if os.Getenv(pgtest.Env) == "" {
		fmt.Fprintf(os.Stderr, "%s: %s is unset: the PostgreSQL examples are not run\n", pkg, pgtest.Env)
		if skip := flag.Lookup("test.skip"); skip != nil && skip.Value.String() == "" {
			flag.Set("test.skip", pattern)
		}
	}
	code := m.Run()
	dropSchemas()
	return code
}

var schemas struct {
	sync.Mutex
	names []string
}

// PostgresURL returns the test database's URL (SCHEDULER_TEST_POSTGRES)
// with search_path set to a new schema, dropped when Main ends: where an
// example's program would use its own database's URL.
func PostgresURL() string {
	base := os.Getenv(pgtest.Env)
	if base == "" {
		panic(pgtest.Env + " is unset")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "example_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		panic(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		panic(err)
	}
	schemas.Lock()
	schemas.names = append(schemas.names, schema)
	schemas.Unlock()
	return pgtest.WithSearchPath(base, schema)
}

func dropSchemas() {
	schemas.Lock()
	defer schemas.Unlock()
	if len(schemas.names) == 0 {
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv(pgtest.Env))
	if err != nil {
		fmt.Fprintln(os.Stderr, "drop example schemas:", err)
		return
	}
	defer conn.Close(ctx)
	for _, s := range schemas.names {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+s+" CASCADE"); err != nil {
			fmt.Fprintln(os.Stderr, "drop example schema:", err)
		}
	}
	schemas.names = nil
}
