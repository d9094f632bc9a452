package engine

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestOpenDispatchesOnTheDSN: a PostgreSQL URL is opened as a database,
// never as a file's path: a server that does not answer gives an error that
// names it without its password, and no file appears.
func TestOpenDispatchesOnTheDSN(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, dsn := range []string{"postgres://app:s3cret@127.0.0.1:1/q", "POSTGRESQL://app:s3cret@127.0.0.1:1/q?sslmode=disable"} {
		q, err := Open(context.Background(), dsn, Config{})
		if err == nil {
			q.Close()
			t.Fatalf("Open(%s) opened something", dsn)
		}
		if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Errorf("Open(%s) = %v; want an error naming the server, without the password", dsn, err)
		}
	}
	if entries, err := os.ReadDir("."); err != nil || len(entries) != 0 {
		t.Errorf("Open of a URL left files %v (%v)", entries, err)
	}
}
