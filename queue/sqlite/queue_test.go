package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpenSetsPragmasOnEveryConnection(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	// Hold several read connections at once so the checks reach distinct ones.
	var conns []*sql.Conn
	for range 3 {
		c, err := q.r.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for i, c := range conns {
		var mode string
		var fk, busy int
		if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
			t.Fatal(err)
		}
		if err := c.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" || fk != 1 || busy != 5000 {
			t.Errorf("conn %d: journal_mode=%s foreign_keys=%d busy_timeout=%d, want wal 1 5000", i, mode, fk, busy)
		}
	}
	var v int
	if err := q.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != SchemaVersion() || v < 1 {
		t.Errorf("user_version = %d, want %d", v, SchemaVersion())
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	ctx := context.Background()
	q, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.w.ExecContext(ctx, "PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	q.Close()
	_, err = Open(ctx, path, Config{})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open(newer) = %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "999") {
		t.Errorf("error %q should name the file and its version", err)
	}
	_, err = Open(ctx, path, Config{ReadOnly: true})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open(newer, read-only) = %v, want ErrSchemaTooNew", err)
	}
}

// TestFailedOpenLeavesNoFileOpen opens a file of a newer schema ten times:
// each Open fails, and none leaves a descriptor open on the file or the
// lock files beside it (the write turn's, which the migration took).
func TestFailedOpenLeavesNoFileOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "q.db")
	ctx := context.Background()
	q, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.w.ExecContext(ctx, "PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	q.Close()
	// Counted by where each descriptor points, so that the files other
	// tests open meanwhile do not count.
	open := func() []string {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("cannot list the process's descriptors: %v", err)
		}
		var in []string
		for _, e := range ents {
			if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(target, dir) {
				in = append(in, target)
			}
		}
		return in
	}
	if fds := open(); len(fds) != 0 {
		t.Fatalf("open before the test: %v", fds)
	}
	for range 10 {
		if _, err := Open(ctx, path, Config{}); !errors.Is(err, ErrSchemaTooNew) {
			t.Fatalf("Open(newer) = %v, want ErrSchemaTooNew", err)
		}
	}
	if fds := open(); len(fds) != 0 {
		t.Errorf("%d descriptors left open by 10 failed opens: %v", len(fds), fds)
	}
}

func TestOpenBadFilesGiveClearErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("this is not sqlite\n", 500)), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(garbage)
	if _, err := Open(ctx, garbage, Config{}); err == nil || !strings.Contains(err.Error(), garbage) {
		t.Errorf("Open(garbage) = %v, want an error naming the file", err)
	}
	after, _ := os.ReadFile(garbage)
	if string(before) != string(after) {
		t.Error("Open changed a file that is not a database")
	}

	// A truncated database: a valid file cut in the middle.
	good := filepath.Join(dir, "good.db")
	q, err := Open(ctx, good, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		mustEnqueue(t, q, NewJob{Type: "t", Payload: json.RawMessage(`{"pad":"` + strings.Repeat("x", 500) + `"}`), Key: string(rune('a'+i%26)) + strings.Repeat("k", i)})
	}
	if err := q.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	q.Close()
	data, _ := os.ReadFile(good)
	cut := filepath.Join(dir, "cut.db")
	if err := os.WriteFile(cut, data[:len(data)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	if q, err := Open(ctx, cut, Config{}); err == nil {
		// SQLite may open a truncated file and fail on first read instead.
		_, serr := q.Stats(ctx)
		q.Close()
		if serr == nil {
			t.Error("a truncated database opened and read without error")
		}
	}

	if _, err := Open(ctx, filepath.Join(dir, "missing", "x.db"), Config{}); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
	if _, err := Open(ctx, filepath.Join(dir, "nope.db"), Config{ReadOnly: true}); err == nil {
		t.Error("read-only Open of a missing file succeeded")
	}
}

func TestOpenReadOnlyFile(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	path := filepath.Join(t.TempDir(), "q.db")
	q, err := Open(context.Background(), path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	os.Chmod(path, 0o400)
	if _, err := Open(context.Background(), path, Config{}); err == nil {
		t.Error("Open of a read-only file for writing succeeded")
	}
}

func TestInstantsAreStoredAsIntegers(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	mustEnqueue(t, q, NewJob{Type: "t", Key: "k", ScheduledAt: t0, Schedule: "s"})
	var runAt, created, scheduled string
	err := q.r.QueryRow(`SELECT typeof(run_at), typeof(created_at), typeof(scheduled_at) FROM jobs`).Scan(&runAt, &created, &scheduled)
	if err != nil {
		t.Fatal(err)
	}
	if runAt != "integer" || created != "integer" || scheduled != "integer" {
		t.Errorf("types = %s %s %s, want integer", runAt, created, scheduled)
	}
	j := mustJob(t, q, "k")
	if !j.RunAt.Equal(t0) || !j.ScheduledAt.Equal(t0) {
		t.Errorf("RunAt=%v ScheduledAt=%v, want %v", j.RunAt, j.ScheduledAt, t0)
	}
}

// TestSingleEnqueuesKeepTheWALBounded enqueues, one by one, more jobs than the WAL holds before it is checkpointed: the WAL must have
// been checkpointed on the way. (An INSERT ... RETURNING closed before its
// end commits without running SQLite's automatic checkpoint.)
func TestSingleEnqueuesKeepTheWALBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, err := Open(ctx, filepath.Join(t.TempDir(), "q.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for range 4000 { // about three pages each
		if _, err := q.Enqueue(ctx, NewJob{Type: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	var busy, frames, copied int
	if err := q.r.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		t.Fatal(err)
	}
	if frames >= 10000 {
		t.Errorf("the WAL holds %d frames after 4000 enqueues: nothing checkpointed it", frames)
	}
}

func TestQueryPlansUseIndexes(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	type plan = struct {
		query string
		args  []any
		want  string
	}
	st := q.statements()
	list := func(f Filter, want string) plan {
		query, args := listQuery(f)
		return plan{query, args, want}
	}
	plans := map[string]plan{
		"claim": {claimQuery(claimSQL, 8), []any{"o", 0, 0, "[]", "[]"}, "jobs_ready"},
		// A pool that accepts other versions than 1 walks the same index.
		"claim versions": {claimQuery(claimSQL, 8), []any{"o", 0, 0, `["t"]`, `[["t", 2]]`}, "jobs_ready"},
		"claim type":     {claimQuery(claimSQL, 8), []any{"o", 0, 0, `["t"]`}, "jobs_ready"},
		"next wake":      {nextWakeSQL, []any{"o", `["t"]`}, "jobs_ready"},
		"waiting":        {waitingSQL, []any{0, "[]", "[]"}, "jobs_ready"},
		"versioned":      {versionedSQL, nil, "jobs_versioned"},
		"leases":         {expiredSQL, []any{0}, "jobs_lease"},
		"purge":          {purgeDoneSQL, []any{0, 10}, "jobs_finished (state=? AND finished_at<?)"},
		"purge keys":     {purgeKeysSQL, []any{0, 10}, "jobs_finished (state=? AND finished_at<?)"},
		// An enqueue's look in used_keys is one search of its primary key.
		"insert":       {insertJobSQL, make([]any, 13), "SEARCH used_keys USING PRIMARY KEY (key=?)"},
		"insert batch": {insertBatchSQL, make([]any, 13*batchRows), "SEARCH u USING PRIMARY KEY (key=?)"},
		"jobs after":   {jobsAfterSQL, []any{0}, "SEARCH jobs USING INTEGER PRIMARY KEY (rowid>?)"},
		// The jobs past the count mark: a range of the ids, however many
		// jobs the table holds.
		"past the mark":     {tailCountsSQL, []any{0, 10}, "SEARCH jobs USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
		"counts":            {countsSQL, nil, "SEARCH jobs USING INTEGER PRIMARY KEY (rowid>?)"},
		"overlap":           {activeSeriesSQL, []any{"s", ""}, "jobs_active_series"},
		"dead":              {st.Dead, []any{10}, "jobs_dead"},
		"by key":            {st.JobByKey, []any{"k"}, "sqlite_autoindex_jobs_1"},
		"complete":          {finishDoneSQL(8), append(make([]any, 32), "o"), "SEARCH jobs USING INTEGER PRIMARY KEY"},
		"list":              list(Filter{Limit: 5}, "SCAN jobs"),
		"list done":         list(Filter{State: StateDone, Limit: 5}, "SCAN jobs"),
		"list dead":         list(Filter{State: StateDead, Limit: 5}, "jobs_dead"),
		"list pending":      list(Filter{State: StatePending, Limit: 5}, "jobs_ready"),
		"list running":      list(Filter{State: StateRunning, Limit: 5}, "jobs_lease"),
		"list cancelled":    list(Filter{State: StateCancelled, Limit: 5}, "jobs_cancelled"),
		"list type":         list(Filter{Type: "t", Limit: 5}, "SCAN jobs"),
		"list schedule":     list(Filter{Schedule: "s", State: StateDead, Limit: 5}, "jobs_dead"),
		"list pending type": list(Filter{Type: "t", State: StatePending, Limit: 5}, "jobs_ready"),
		"list key":          list(Filter{KeyPrefix: "s|", Limit: 5}, "sqlite_autoindex_jobs_1"),
		// A later page of the dashboard's jobs: a range of the ids.
		"list before":          list(Filter{BeforeID: 10, Limit: 5}, "SEARCH jobs USING INTEGER PRIMARY KEY (rowid<?)"),
		"list state before":    list(Filter{State: StateDead, BeforeID: 10, Limit: 5}, "jobs_dead (id<?)"),
		"list schedule before": list(Filter{Schedule: "s", BeforeID: 10, Limit: 5}, "SEARCH jobs USING INTEGER PRIMARY KEY (rowid<?)"),
		// The strip of a schedule: its newest instants' jobs (its skips are
		// ListSkips's, "skips of").
		"schedule jobs": {st.ScheduleJobs, []any{"s", 60}, "jobs_schedule_at (schedule=?)"},
		"instant":       {st.InstantStates, []any{"s", 0}, "jobs_schedule_at"},
		"manual run":    {st.ManualRunStates, []any{"s", 10, 3, "|manual|k"}, "jobs_schedule_at (schedule=? AND scheduled_at=? AND rowid<?)"},
		"skips":         {st.SkipsAll, []any{5}, "skips_at"},
		"skips of":      {st.SkipsOf, []any{"s", 5}, "skips_schedule_at"},
		"skip count":    {st.SkipCount, []any{"s", 0, 5}, "skips_schedule_at"},
		"last skip":     {st.LastSkip, []any{"s"}, "skips_schedule_at"},
		"skip at":       {st.SkipAt, []any{"s", "i", 0}, "SEARCH skips"},
		"daemons":       {st.Pools, nil, "SCAN pools"},
		"finishes":      {st.Finishes, []any{`["s"]`}, "jobs_schedule_finished"},
		// The charts count each end state's range of jobs_finished, never
		// a job's row.
		"activity":    {st.ActivityAll, []any{0, 60000, 0, 3600000}, "COVERING INDEX jobs_finished (state=? AND finished_at>? AND finished_at<?)"},
		"chart marks": {st.ChartMarks, []any{0, 3600000, 7200000}, "COVERING INDEX jobs_finished (state=? AND finished_at>? AND finished_at<?)"},
		// The alarms' evaluation: bounded ranges of indexes, never the table.
		"instant jobs":  {st.InstantJobs, []any{"s", 0, 1, 10}, "jobs_schedule_at (schedule=? AND scheduled_at>? AND scheduled_at<?)"},
		"dead jobs":     {st.DeadJobs, []any{0, 10}, "jobs_dead_finished (finished_at>?)"},
		"skips between": {st.SkipsBetween, []any{"s", 0, 1, "misfire", 10}, "skips_schedule_at (schedule=? AND scheduled_at>? AND scheduled_at<?)"},
		"open alarms":   {openAlarmsSQL, []any{10}, "alarms_open"},
		"notifying":     {openAlarmsSQL, []any{10}, "jobs_alarm"},
		"alarms of":     {st.AlarmsOf, []any{"s", 10}, "alarms_schedule (schedule=?)"},
		"last success":  {st.LastSuccess, []any{"s"}, "jobs_schedule_at (schedule=? AND scheduled_at>?)"},
		// A downstream schedule's upstream failures, by when recorded.
		"upstream failed": {st.UpstreamFailedSkips, []any{"s", 0, 10}, "skips_upstream_failed (schedule=? AND recorded_at>?)"},
		// A batch's compare-and-set of the cursors is one search each.
		"move cursors": {moveCursorsSQL, make([]any, 4*casRows+1), "SEARCH cursors USING PRIMARY KEY (schedule=?)"},
	}
	for name, p := range plans {
		rows, err := q.r.Query("EXPLAIN QUERY PLAN "+p.query, p.args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			rows.Scan(&id, &parent, &notused, &detail)
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "; ")
		if testing.Verbose() {
			t.Logf("%s: %s", name, text)
		}
		if !strings.Contains(text, p.want) {
			t.Errorf("%s: plan %q does not use %s", name, text, p.want)
		}
		// A purge batch walks the done jobs by finished_at and stops at its
		// limit; it sorts at most the ids of one finished_at, never the range.
		if strings.HasPrefix(name, "purge") && strings.Contains(text, "TEMP B-TREE FOR ORDER BY") {
			t.Errorf("%s: plan %q sorts instead of walking jobs_finished in order", name, text)
		}
		// The manual run walks the index down from lastID and stops at
		// span jobs: it must not sort the schedule's manual jobs.
		if name == "manual run" && strings.Contains(text, "TEMP B-TREE FOR ORDER BY") {
			t.Errorf("%s: plan %q sorts instead of walking jobs_schedule_at in order", name, text)
		}
		// A list of all or of done jobs walks the ids backwards on purpose
		// and stops at its limit.
		if strings.Contains(text, "SCAN jobs") && !strings.Contains(text, "USING") && p.want != "SCAN jobs" {
			t.Errorf("%s: plan %q scans the table", name, text)
		}
	}
}

// TestNextWakePlan: the next wake reads the first entry of jobs_ready per
// priority, never the table. (What it returns is the suite's NextWake.)
func TestNextWakePlan(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	for i, j := range []struct {
		prio int
		at   time.Duration
	}{{5, 10 * time.Minute}, {5, 20 * time.Minute}, {0, time.Minute}, {-3, 30 * time.Second}, {-3, time.Hour}, {7, 2 * time.Hour}} {
		mustEnqueue(t, q, NewJob{Type: "t", Key: fmt.Sprint(i), Priority: j.prio, RunAt: t0.Add(j.at)})
	}
	rows, err := q.r.Query("EXPLAIN QUERY PLAN "+nextWakeSQL, "me", `["t"]`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, parent, notused int
		var detail string
		rows.Scan(&id, &parent, &notused, &detail)
		// The one SCAN is of jobs_ready with LIMIT 1: its first entry.
		if strings.HasPrefix(detail, "SCAN jobs") && !strings.Contains(detail, "INDEX jobs_ready") {
			t.Errorf("next wake scans the table: %s", detail)
		}
	}
}
