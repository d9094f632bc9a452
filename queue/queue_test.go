package queue

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestOpenDispatchesOnTheDSN: a PostgreSQL DSN is not opened as a file
// path: it gets an error that says so, without the DSN's password.
func TestOpenDispatchesOnTheDSN(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"postgres://app:s3cret@db:5432/q", "postgresql://app:s3cret@db/q?sslmode=disable"} {
		q, err := Open(context.Background(), dsn, Config{})
		if err == nil {
			q.Close()
			t.Fatalf("Open(%s) opened something", dsn)
		}
		if !errors.Is(err, ErrUnsupported) || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "PostgreSQL") {
			t.Errorf("Open(%s) = %v; want ErrUnsupported naming PostgreSQL, without the password", dsn, err)
		}
	}
}
