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

	"scheduler/clock"
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

func TestEnqueueIsIdempotentOnKey(t *testing.T) {
	t.Parallel()
	// Unsynced single enqueues take a path of their own (insertOne).
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoSyncEnqueue=%t", noSync), func(t *testing.T) {
			t.Parallel()
			q, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), Config{Clock: clock.NewFake(t0), NoSyncEnqueue: noSync})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			mustEnqueue(t, q, NewJob{Type: "t", Key: "before"})
			first := mustEnqueue(t, q, NewJob{Type: "t", Key: "nightly|acme|2026-03-01T03:00:00Z"})
			second := mustEnqueue(t, q, NewJob{Type: "other", Key: "nightly|acme|2026-03-01T03:00:00Z"})
			if !first.Inserted || second.Inserted {
				t.Errorf("Inserted = %v, %v; want true, false", first.Inserted, second.Inserted)
			}
			if second.ID != first.ID || first.ID == 0 {
				t.Errorf("second enqueue returned id %d, want the existing %d", second.ID, first.ID)
			}
			if j := mustJob(t, q, first.Key); j.Type != "t" || j.ID != first.ID {
				t.Errorf("job %d of type %q: the second enqueue changed the job", j.ID, j.Type)
			}
		})
	}
}

// TestSingleEnqueuesKeepTheWALBounded enqueues, one by one and unsynced,
// more jobs than the WAL holds before it is checkpointed: the WAL must have
// been checkpointed on the way. (An INSERT ... RETURNING closed before its
// end commits without running SQLite's automatic checkpoint.)
func TestSingleEnqueuesKeepTheWALBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, err := Open(ctx, filepath.Join(t.TempDir(), "q.db"), Config{NoSyncEnqueue: true})
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

func TestEnqueueBatchIsAllOrNothing(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	_, err := q.EnqueueBatch(ctx, []NewJob{{Type: "t", Key: "a"}, {Type: "t", Key: "b", Payload: json.RawMessage(`{bad`)}})
	if err == nil {
		t.Fatal("batch with an invalid payload succeeded")
	}
	_, err = q.EnqueueBatch(ctx, []NewJob{{Type: "t", Key: "a"}, {Type: "", Key: "b"}})
	if err == nil {
		t.Fatal("batch with an empty type succeeded")
	}
	s, _ := q.Stats(ctx)
	if s.Total[StatePending] != 0 {
		t.Fatalf("%d jobs left by failed batches, want 0", s.Total[StatePending])
	}
	res, err := q.EnqueueBatch(ctx, []NewJob{{Type: "t", Key: "a"}, {Type: "t", Key: "b"}, {Type: "t", Key: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Inserted || !res[1].Inserted || res[2].Inserted || res[2].ID != res[0].ID {
		t.Errorf("results = %+v", res)
	}
}

func TestAdvanceMovesCursorWithRowsAtomically(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	i1 := t0.Add(time.Minute)
	jobs := []NewJob{{Type: "t", Key: "s||1", Schedule: "s", ScheduledAt: i1, RunAt: i1}}
	if _, err := q.Advance(ctx, Advance{Schedule: "s", To: t0}); err != nil {
		t.Fatalf("create cursor: %v", err)
	}
	// A second creator loses.
	if _, err := q.Advance(ctx, Advance{Schedule: "s", To: t0}); !errors.Is(err, ErrCursorMoved) {
		t.Fatalf("second create = %v, want ErrCursorMoved", err)
	}
	if _, err := q.Advance(ctx, Advance{Schedule: "s", From: t0, To: i1, Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	// A beat that read the old cursor writes nothing.
	stale := []NewJob{{Type: "t", Key: "s||other", Schedule: "s", ScheduledAt: i1}}
	if _, err := q.Advance(ctx, Advance{Schedule: "s", From: t0, To: i1, Jobs: stale}); !errors.Is(err, ErrCursorMoved) {
		t.Fatalf("stale advance = %v, want ErrCursorMoved", err)
	}
	if _, err := jobByRef(ctx, q, "s||other"); !errors.Is(err, ErrNotFound) {
		t.Errorf("stale advance inserted its job: %v", err)
	}
	// Backwards is refused.
	if _, err := q.Advance(ctx, Advance{Schedule: "s", From: i1, To: t0}); err == nil {
		t.Error("cursor moved backwards")
	}
	// A failing row rolls the cursor back too.
	bad := []NewJob{{Type: "", Key: "x"}}
	if _, err := q.Advance(ctx, Advance{Schedule: "s", From: i1, To: i1.Add(time.Minute), Jobs: bad}); err == nil {
		t.Error("advance with a bad job succeeded")
	}
	cs, err := q.Cursors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs["s"].At; !got.Equal(i1) {
		t.Errorf("cursor = %v, want %v", got, i1)
	}
}

func TestAdvanceSkipIfActiveRecordsOverlap(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	i1, i2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	mk := func(at time.Time, item string) NewJob {
		return NewJob{Type: "t", Key: "s|" + item + "|" + at.Format(time.RFC3339), Schedule: "s", Item: item, ScheduledAt: at, SkipIfActive: true}
	}
	q.Advance(ctx, Advance{Schedule: "s", To: t0})
	if _, err := q.Advance(ctx, Advance{Schedule: "s", From: t0, To: i1, Jobs: []NewJob{mk(i1, "a")}}); err != nil {
		t.Fatal(err)
	}
	res, err := q.Advance(ctx, Advance{Schedule: "s", From: i1, To: i2, Jobs: []NewJob{mk(i2, "a"), mk(i2, "b")}})
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Skipped || res[0].Inserted || res[1].Skipped || !res[1].Inserted {
		t.Errorf("results = %+v, want a skipped (a still pending), b inserted", res)
	}
	skips, err := q.Skips(ctx, "s", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(skips) != 1 || skips[0].Item != "a" || skips[0].Reason != SkipOverlap || !skips[0].ScheduledAt.Equal(i2) {
		t.Errorf("skips = %+v", skips)
	}
}

func TestPauseIsDurable(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	if err := q.SetPaused(ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	cs, _ := q.Cursors(ctx)
	if c := cs["s"]; !c.Paused || !c.At.Equal(t0) || !c.PausedAt.Equal(t0) {
		t.Errorf("cursor = %+v, want paused at %v", c, t0)
	}
	q.SetPaused(ctx, "s", false)
	cs, _ = q.Cursors(ctx)
	if cs["s"].Paused {
		t.Error("still paused after resume")
	}
}

// TestAdvanceComparesThePause: the pause is part of the cursor's
// compare-and-set. An Advance read before a pause commits nothing after it;
// only a resuming Advance moves a paused cursor, and it resumes it.
func TestAdvanceComparesThePause(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	i1 := t0.Add(time.Minute)
	job := []NewJob{{Type: "t", Key: "s||1", Schedule: "s", ScheduledAt: i1, RunAt: i1}}
	if _, err := q.Advance(ctx, Advance{Schedule: "s", To: t0}); err != nil {
		t.Fatal(err)
	}
	read, _ := q.Cursors(ctx)
	if err := q.SetPaused(ctx, "s", true); err != nil {
		t.Fatal(err)
	}
	_, err := q.Advance(ctx, Advance{Schedule: "s", From: read["s"].At, Paused: read["s"].Paused, To: i1, Jobs: job})
	if !errors.Is(err, ErrCursorMoved) {
		t.Fatalf("Advance read before the pause = %v, want ErrCursorMoved", err)
	}
	if _, err := jobByRef(ctx, q, "s||1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Advance read before the pause inserted its job: %v", err)
	}
	if _, err := q.Advance(ctx, Advance{Schedule: "s", From: t0, To: i1, Resume: true}); err == nil {
		t.Error("Resume without Paused accepted")
	}
	if _, err := q.Advance(ctx, Advance{Schedule: "s", From: t0, Paused: true, Resume: true, To: i1, Jobs: job}); err != nil {
		t.Fatalf("resuming Advance: %v", err)
	}
	cs, _ := q.Cursors(ctx)
	if c := cs["s"]; c.Paused || !c.At.Equal(i1) || !c.PausedAt.IsZero() {
		t.Errorf("cursor = %+v, want running at %v", c, i1)
	}
	mustJob(t, q, "s||1")
	if _, err := q.Advance(ctx, Advance{Schedule: "s", From: i1, Paused: true, Resume: true, To: i1}); !errors.Is(err, ErrCursorMoved) {
		t.Errorf("second resume = %v, want ErrCursorMoved", err)
	}
	// A schedule paused before it had a cursor is not created by a beat.
	if err := q.SetPaused(ctx, "new", true); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Advance(ctx, Advance{Schedule: "new", To: t0}); !errors.Is(err, ErrCursorMoved) {
		t.Errorf("creating a paused cursor = %v, want ErrCursorMoved", err)
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
	list := func(f Filter, want string) plan {
		query, args := listQuery(f)
		return plan{query, args, want}
	}
	plans := map[string]plan{
		"claim":      {claimQuery(claimSQL, 8), []any{"o", 0, 0, "[]"}, "jobs_ready"},
		"claim type": {claimQuery(claimTypeSQL, 8), []any{"o", 0, 0, "t"}, "jobs_ready"},
		"next wake":  {nextWakeSQL, []any{"o", `["t"]`}, "jobs_ready"},
		"waiting":    {waitingSQL, []any{0, 0}, "jobs_ready"},
		"leases":     {expiredSQL, []any{0}, "jobs_lease"},
		"purge":      {purgeDoneSQL, []any{0, 10}, "jobs_done"},
		"purge keys": {purgeKeysSQL, []any{0, 10}, "jobs_done"},
		// An enqueue's look in used_keys is one search of its primary key.
		"insert":            {insertJobSQL, make([]any, 10), "SEARCH used_keys USING PRIMARY KEY (key=?)"},
		"insert batch":      {insertBatchSQL, make([]any, 10*batchRows), "SEARCH u USING PRIMARY KEY (key=?)"},
		"overlap":           {activeSeriesSQL, []any{"s", ""}, "jobs_active_series"},
		"dead":              {deadSQL, []any{10}, "jobs_dead"},
		"by key":            {jobByKeySQL, []any{"k"}, "sqlite_autoindex_jobs_1"},
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
		"instant":           {instantStatesSQL, []any{"s", 0}, "jobs_schedule_at"},
		"manual run":        {runStatesSQL, []any{"s", 10, 3, "|manual|k"}, "rowid>?"},
		"skips":             {skipsAllSQL, []any{5}, "skips_at"},
		"skips of":          {skipsOfSQL, []any{"s", 5}, "skips_schedule_at"},
		"skip count":        {skipCountSQL, []any{"s", 0, 5}, "skips_schedule_at"},
		"last skip":         {lastSkipSQL, []any{"s"}, "skips_schedule_at"},
		"skip at":           {skipAtSQL, []any{"s", "i", 0}, "SEARCH skips"},
		"daemons":           {daemonsSQL, nil, "SCAN pools"},
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
		if strings.HasPrefix(name, "purge") && strings.Contains(text, "TEMP B-TREE") {
			t.Errorf("%s: plan %q sorts instead of walking jobs_done in order", name, text)
		}
		// A list of all or of done jobs walks the ids backwards on purpose
		// and stops at its limit.
		if strings.Contains(text, "SCAN jobs") && !strings.Contains(text, "USING") && p.want != "SCAN jobs" {
			t.Errorf("%s: plan %q scans the table", name, text)
		}
	}
}

func TestFakeClockIsUsedForTimestamps(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(t0)
	q, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	clk.Advance(time.Hour)
	mustEnqueue(t, q, NewJob{Type: "t", Key: "k"})
	if j := mustJob(t, q, "k"); !j.CreatedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("CreatedAt = %v, want %v", j.CreatedAt, t0.Add(time.Hour))
	}
}

func TestNextWakeAcrossPriorities(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	ready, lease, err := nextWake(ctx, q.r, "me", `["t"]`)
	if err != nil || !ready.IsZero() || !lease.IsZero() {
		t.Fatalf("empty queue: %v %v %v", ready, lease, err)
	}
	for i, j := range []struct {
		prio int
		at   time.Duration
	}{{5, 10 * time.Minute}, {5, 20 * time.Minute}, {0, time.Minute}, {-3, 30 * time.Second}, {-3, time.Hour}, {7, 2 * time.Hour}} {
		mustEnqueue(t, q, NewJob{Type: "t", Key: fmt.Sprint(i), Priority: j.prio, RunAt: t0.Add(j.at)})
	}
	ready, _, err = nextWake(ctx, q.r, "me", `["t"]`)
	if err != nil || !ready.Equal(t0.Add(30*time.Second)) {
		t.Errorf("nextWake = %v, %v; want %v", ready, err, t0.Add(30*time.Second))
	}
	rows, _ := q.r.Query("EXPLAIN QUERY PLAN "+nextWakeSQL, "me", `["t"]`)
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

// TestEnqueueBatchLargeKeepsPerJobResults: a batch big enough for the
// multi-row path reports, per job and in order, its id and whether it was
// inserted, with keys repeated inside the batch and keys that existed.
func TestEnqueueBatchLargeKeepsPerJobResults(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	old := mustEnqueue(t, q, NewJob{Type: "t", Key: "k150"})
	var jobs []NewJob
	for i := range 250 {
		jobs = append(jobs, NewJob{Type: "t", Key: fmt.Sprint("k", i%220)})
	}
	res, err := q.EnqueueBatch(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for i, r := range res {
		key := jobs[i].Key
		wantInserted := i < 220 && key != "k150"
		if r.Key != key || r.Inserted != wantInserted {
			t.Fatalf("result %d = %+v, want key %s inserted %v", i, r, key, wantInserted)
		}
		if prev, ok := ids[key]; ok && prev != r.ID {
			t.Fatalf("key %s has ids %d and %d", key, prev, r.ID)
		}
		ids[key] = r.ID
		if j := mustJob(t, q, key); j.ID != r.ID {
			t.Fatalf("result %d: id %d, stored %d", i, r.ID, j.ID)
		}
	}
	if ids["k150"] != old.ID {
		t.Errorf("existing key got id %d, want %d", ids["k150"], old.ID)
	}
	if s, _ := q.Stats(ctx); s.Total[StatePending] != 220 {
		t.Errorf("%d jobs stored, want 220", s.Total[StatePending])
	}
}
