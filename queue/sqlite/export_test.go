package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// CountJobs counts every job by state and type, row by row: the truth that
// job_counts must agree with (see storetest.JobCounter).
func (s *Store) CountJobs(ctx context.Context) (map[store.State]map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, countEveryJobSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[store.State]map[string]int{}
	for rows.Next() {
		var st store.State
		var typ string
		var n int
		if err := rows.Scan(&st, &typ, &n); err != nil {
			return nil, err
		}
		if out[st] == nil {
			out[st] = map[string]int{}
		}
		out[st][typ] = n
	}
	return out, rows.Err()
}

// CreateAtVersion creates the file at path with the schema of its first v
// migrations and nothing else: an older file, for tests of what the later
// migrations do to it.
func CreateAtVersion(ctx context.Context, path string, v int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite", dsn(path, 5*time.Second, false))
	if err != nil {
		return err
	}
	defer db.Close()
	for _, m := range ms[:v] {
		if _, err := db.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.name, err)
		}
	}
	_, err = db.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
	return err
}
