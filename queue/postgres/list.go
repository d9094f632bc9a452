package postgres

import (
	"fmt"
	"strings"

	"github.com/scheduler-run/scheduler/queue/store"
)

// listQuery builds the read of the jobs f selects (see store.Base.List): a
// list of one state walks that state's partial index, a list of all jobs
// the ids, and a key prefix the key index, each stopping at the limit. A
// filter by type or schedule keeps the matches among the newest
// ListScanBound jobs of the state's walk.
func listQuery(f store.Filter) (string, []any) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	state := ""
	if f.State != "" {
		// A literal (the flow checked it is a state), so that the planner
		// may use the partial index of that state.
		state = "state = '" + string(f.State) + "'"
	}
	if f.Type != "" {
		where = append(where, "type = "+arg(f.Type))
	}
	if f.Schedule != "" {
		where = append(where, "schedule = "+arg(f.Schedule))
	}
	before := ""
	if f.BeforeID > 0 {
		before = "id < " + arg(f.BeforeID)
	}
	var query string
	if (f.Type != "" || f.Schedule != "") && f.KeyPrefix == "" {
		inner := `SELECT ` + jobColumns + ` FROM jobs`
		if w := nonEmpty(state, before); len(w) > 0 {
			inner += ` WHERE ` + strings.Join(w, " AND ")
		}
		query = `SELECT ` + jobColumns + ` FROM (` + inner + ` ORDER BY id DESC LIMIT ` + arg(store.ListScanBound) + `) s WHERE ` +
			strings.Join(where, " AND ")
	} else {
		where = append(nonEmpty(state, before), where...)
		if f.KeyPrefix != "" {
			// A range of the key index (key collates as "C": by bytes),
			// not LIKE, whose wildcards a key may contain.
			where = append(where, "key >= "+arg(f.KeyPrefix)+" AND key < "+arg(f.KeyPrefix+"\U0010FFFF"))
		}
		query = `SELECT ` + jobColumns + ` FROM jobs`
		if len(where) > 0 {
			query += ` WHERE ` + strings.Join(where, " AND ")
		}
	}
	return query + ` ORDER BY id DESC LIMIT ` + arg(f.Limit), args
}

// nonEmpty returns the terms of ts that are not empty.
func nonEmpty(ts ...string) []string {
	var out []string
	for _, t := range ts {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}
