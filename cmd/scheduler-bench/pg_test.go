package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
)

// TestMain runs the program itself when the test binary is started as the
// producer process of cfg=otherproc.
func TestMain(m *testing.M) {
	if os.Getenv(produceEnv) != "" {
		if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// pgDSN returns the test server's address, or skips the test.
func pgDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv(pgtest.Env)
	if dsn == "" {
		t.Skip(pgtest.Env + " is unset; run with " + pgtest.Env + "=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	return dsn
}

// leftSchemas returns the schemas this process's runs left behind.
func leftSchemas(t *testing.T, dsn string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE $1`,
		fmt.Sprintf("scheduler\\_bench\\_%d\\_%%", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestPostgresRun runs the throughput and latency command lines of
// peerbench's SELF_PG_CMD, and a nodes run, on the test server: the
// configurations of PostgreSQL, each in a schema of its own that is
// dropped after it.
func TestPostgresRun(t *testing.T) {
	dsn := pgDSN(t) // not parallel: leftSchemas looks at every run of this process
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"-jobs", "300"}, []string{"default/enqueue", "default/drain", "batch100/enqueue", "producers8/enqueue"}},
		{[]string{"-mode", "latency", "-latjobs", "50", "-warmup", "100ms"}, []string{"default/latency", "othernode/latency", "otherproc/latency"}},
		{[]string{"-mode", "nodes", "-jobs", "300", "-nodes", "2"}, []string{"nodes1/drain", "nodes2/drain"}},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"-rep", "5", "-workers", "4", "-dsn", dsn}, tt.args...)
		if err := run(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("run(%q): %v\nstderr:\n%s", args, err, stderr.String())
		}
		lines := parseResults(t, stdout.String())
		n := 300
		if tt.want[0] == "default/latency" {
			n = 50
		}
		got := checkSystemLines(t, "scheduler-pg", lines, tt.want, n, 4, 5)
		if r, ok := got["nodes2/drain"]; ok && (r["nodes"] != "2" || r.num(t, "x_nodes1") <= 0) {
			t.Errorf("nodes2/drain: nodes=%s x_nodes1=%s, want 2 and a positive ratio", r["nodes"], r["x_nodes1"])
		}
		checkSystemStderr(t, "scheduler-pg", stderr.String())
		if left := leftSchemas(t, dsn); len(left) > 0 {
			t.Errorf("run(%q) left schemas %v", args, left)
		}
	}
}
