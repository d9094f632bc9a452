package sqlite

import (
	"strings"

	"github.com/scheduler-run/scheduler/queue/store"
)

// stateTerm is List's condition for each state. Done jobs are most of the
// table and lie dense among the newest ids: walking the ids backwards finds
// a page of them at once, so the term hides the column from the planner
// (+state), which would otherwise sort every done job by id.
var stateTerm = map[store.State]string{
	store.StatePending:   "state = 'pending'",
	store.StateRunning:   "state = 'running'",
	store.StateDone:      "+state = 'done'",
	store.StateDead:      "state = 'dead'",
	store.StateCancelled: "state = 'cancelled'",
}

// stateIndex is the partial index a list of pending or running jobs reads:
// those jobs are few among many done ones, which a walk of the ids would
// pass over one by one. The planner, without statistics, prefers the walk.
var stateIndex = map[store.State]string{
	store.StatePending: "jobs_ready",
	store.StateRunning: "jobs_lease",
}

// listQuery builds the read of the jobs f selects (see store.Base.List):
// a list of one state walks that state's partial index, a list of all jobs
// the ids, and a key prefix the unique key index, each stopping at the
// limit. The conditions are fixed texts with ? placeholders; only which of
// them appear varies.
func listQuery(f store.Filter) (string, []any) {
	var where []string
	var args []any
	if f.State != "" {
		// The state as a literal (List checked it is one of five), so that
		// the planner may use the partial index of that state.
		where = append(where, stateTerm[f.State])
	}
	if f.Type != "" {
		where, args = append(where, "type = ?"), append(args, f.Type)
	}
	if f.Schedule != "" {
		where, args = append(where, "schedule = ?"), append(args, f.Schedule)
	}
	if f.KeyPrefix != "" {
		// A range on the key's unique index (not LIKE, whose wildcards and
		// case folding a key may contain). Text compares by bytes, and no
		// UTF-8 text continues a prefix with bytes above U+10FFFF's.
		where = append(where, "key >= ? AND key < ?")
		args = append(args, f.KeyPrefix, f.KeyPrefix+"\U0010FFFF")
	}
	if (f.Type != "" || f.Schedule != "") && f.KeyPrefix == "" {
		// The newest ListScanBound jobs of the walk a list of the state
		// alone would make, then the type and schedule among them.
		inner, innerArgs := stateOnly(f.State, f.BeforeID)
		return `SELECT ` + jobColumns + ` FROM (` + inner + ` ORDER BY id DESC LIMIT ?) WHERE ` +
				strings.Join(where[min(len(where), stateTerms(f)):], " AND ") + ` ORDER BY id DESC LIMIT ?`,
			append(append(append(innerArgs, store.ListScanBound), args...), f.Limit)
	}
	if f.BeforeID > 0 {
		where, args = append(where, "id < ?"), append(args, f.BeforeID)
	}
	query := `SELECT ` + jobColumns + ` FROM jobs`
	if ix := stateIndex[f.State]; ix != "" && f.KeyPrefix == "" {
		query += ` INDEXED BY ` + ix
	}
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	return query + ` ORDER BY id DESC LIMIT ?`, append(args, f.Limit)
}

// stateOnly is the walk of a list of state alone (every job when state is
// empty), below the id before when it is not zero, without its ORDER BY
// and LIMIT.
func stateOnly(state store.State, before int64) (string, []any) {
	query := `SELECT ` + jobColumns + ` FROM jobs`
	if ix := stateIndex[state]; ix != "" {
		query += ` INDEXED BY ` + ix
	}
	var where []string
	var args []any
	if state != "" {
		where = append(where, stateTerm[state])
	}
	if before > 0 {
		where, args = append(where, "id < ?"), append(args, before)
	}
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	return query, args
}

// stateTerms is how many of listQuery's conditions are the state's: the
// first, if f has one.
func stateTerms(f store.Filter) int {
	if f.State != "" {
		return 1
	}
	return 0
}
