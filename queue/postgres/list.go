package postgres

import (
	"fmt"
	"strings"

	"github.com/scheduler-run/scheduler/queue/store"
)

// listQuery builds the read of the jobs f selects (see store.Base.List).
func listQuery(f store.Filter) (string, []any) {
	if f.PayloadContains != "" {
		inner := f
		inner.PayloadContains, inner.Limit = "", store.PayloadScanBound
		query, args := listQuery(inner)
		n := len(args)
		return fmt.Sprintf(`SELECT `+jobColumns+` FROM (%s) p WHERE strpos(payload, $%d) > 0 ORDER BY id DESC LIMIT $%d`, query, n+1, n+2),
			append(args, f.PayloadContains, f.Limit)
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	state := ""
	if f.State != "" {
		// A literal, so the planner may use that state's partial index.
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
			// A range of the key index (collated "C"): LIKE would read a
			// key's wildcards.
			where = append(where, "key >= "+arg(f.KeyPrefix)+" AND key < "+arg(f.KeyPrefix+"\U0010FFFF"))
		}
		query = `SELECT ` + jobColumns + ` FROM jobs`
		if len(where) > 0 {
			query += ` WHERE ` + strings.Join(where, " AND ")
		}
	}
	return query + ` ORDER BY id DESC LIMIT ` + arg(f.Limit), args
}

func nonEmpty(ts ...string) []string {
	var out []string
	for _, t := range ts {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}
