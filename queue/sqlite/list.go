package sqlite

import (
	"strings"

	"github.com/scheduler-run/scheduler/queue/store"
)

// stateTerm is List's condition per state. Done jobs lie dense among the
// newest ids, so a backward id walk finds a page at once; +state hides the
// column from the planner, which would sort every done job.
var stateTerm = map[store.State]string{
	store.StatePending:   "state = 'pending'",
	store.StateRunning:   "state = 'running'",
	store.StateDone:      "+state = 'done'",
	store.StateDead:      "state = 'dead'",
	store.StateCancelled: "state = 'cancelled'",
	store.StateDiscarded: "state = 'discarded'",
}

// stateIndex is the partial index a list of pending or running jobs reads:
// they are few among done ones, which the planner, without statistics, would
// walk past one by one.
var stateIndex = map[store.State]string{
	store.StatePending: "jobs_ready",
	store.StateRunning: "jobs_lease",
}

// listQuery builds the read of the jobs f selects (see store.Base.List) from
// fixed conditions with ? placeholders.
func listQuery(f store.Filter) (string, []any) {
	if f.PayloadContains != "" {
		inner := f
		inner.PayloadContains, inner.Limit = "", store.PayloadScanBound
		query, args := listQuery(inner)
		return `SELECT ` + jobColumns + ` FROM (` + query + `) WHERE instr(payload, ?) > 0 ORDER BY id DESC LIMIT ?`,
			append(args, f.PayloadContains, f.Limit)
	}
	var where []string
	var args []any
	if f.State != "" {
		// A literal, so the planner may use its partial index.
		where = append(where, stateTerm[f.State])
	}
	if f.Type != "" {
		where, args = append(where, "type = ?"), append(args, f.Type)
	}
	if f.Schedule != "" {
		where, args = append(where, "schedule = ?"), append(args, f.Schedule)
	}
	if f.KeyPrefix != "" {
		// A range on the key index (LIKE would read a key's wildcards).
		// Text compares by bytes; no UTF-8 continues a prefix past
		// U+10FFFF's.
		where = append(where, "key >= ? AND key < ?")
		args = append(args, f.KeyPrefix, f.KeyPrefix+"\U0010FFFF")
	}
	if (f.Type != "" || f.Schedule != "") && f.KeyPrefix == "" {
		// The newest ListScanBound jobs of the state's walk, filtered.
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

// stateOnly is the walk of a list of state alone (all for ""), below a
// non-zero before, without ORDER BY and LIMIT.
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

func stateTerms(f store.Filter) int {
	if f.State != "" {
		return 1
	}
	return 0
}
