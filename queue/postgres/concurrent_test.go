package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
)

// TestOpenConcurrently opens three stores on a new schema at once: the
// migrations run once and all three open.
func TestOpenConcurrently(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(context.Background(), dsn, postgres.Config{LocalClock: true})
			if err == nil {
				err = s.Ping(context.Background())
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
