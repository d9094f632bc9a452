package sqlite

import (
	"context"

	"scheduler/queue/store"
)

// CountJobs counts every job by state and type, row by row: the truth that
// job_counts must agree with (see storetest.JobCounter).
func (s *Store) CountJobs(ctx context.Context) (map[store.State]map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, statsSQL)
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
