package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
)

// TestMain runs the package's examples only where a test database is
// named (SCHEDULER_TEST_POSTGRES, which .ci/run always sets): an example
// cannot skip, so without one they are left out with -test.skip, and say
// so, as the tests skip. With one, each example gets a schema of its own
// (exampleDSN), dropped at the end.
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(pgtest.Env) == "" {
		fmt.Fprintln(os.Stderr, "postgres: "+pgtest.Env+" is unset: the examples are not run")
		if skip := flag.Lookup("test.skip"); skip != nil && skip.Value.String() == "" {
			flag.Set("test.skip", "^Example")
		}
	}
	code := m.Run()
	dropExampleSchemas()
	os.Exit(code)
}

var exampleSchemas []string

// exampleDSN returns the test database's URL with search_path set to a new
// schema: where an example's program would use its own database's URL.
func exampleDSN() string {
	base := os.Getenv(pgtest.Env)
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
	exampleSchemas = append(exampleSchemas, schema)
	return pgtest.WithSearchPath(base, schema)
}

func dropExampleSchemas() {
	if len(exampleSchemas) == 0 {
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv(pgtest.Env))
	if err != nil {
		fmt.Fprintln(os.Stderr, "drop example schemas:", err)
		return
	}
	defer conn.Close(ctx)
	for _, s := range exampleSchemas {
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+s+" CASCADE"); err != nil {
			fmt.Fprintln(os.Stderr, "drop example schema:", err)
		}
	}
}
