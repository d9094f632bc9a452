// Package pgtest gives tests a PostgreSQL schema of their own: the
// database named by SCHEDULER_TEST_POSTGRES, with a fresh schema that is
// dropped when the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Env names the variable that holds the test database's address.
const Env = "SCHEDULER_TEST_POSTGRES"

// DSN returns the address of the test database with search_path set to a
// new schema, dropped in t.Cleanup. It skips the test when Env is unset.
func DSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(Env)
	if base == "" {
		t.Skip(Env + " is unset; run with " + Env + "=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to %s: %v", Env, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return WithSearchPath(base, schema)
}

// WithSearchPath returns dsn (a URL or key=value string) with search_path
// set to schema.
func WithSearchPath(dsn, schema string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return strings.TrimSpace(dsn) + " search_path=" + schema
}
