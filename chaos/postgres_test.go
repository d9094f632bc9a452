package chaos

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to read the daemons' rows
)

// postgresEnv names the PostgreSQL server the tests may use: a DSN whose
// database the tests create schemas in.
const postgresEnv = "SCHEDULER_TEST_POSTGRES"

// pgSchema creates a schema of its own for the test on the server named by
// SCHEDULER_TEST_POSTGRES and returns a DSN whose search_path is that
// schema, the test's own database as far as the daemons can tell. It drops
// the schema when the test ends. Without the variable the test skips.
func pgSchema(t *testing.T) string {
	t.Helper()
	base := os.Getenv(postgresEnv)
	if base == "" {
		t.Skip(postgresEnv + " is not set: run with " + postgresEnv + "=postgres://postgres@127.0.0.1:5432/test?sslmode=disable (as .ci/run does) to test on PostgreSQL")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	schema := fmt.Sprintf("chaos_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1e6))
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema on %s: %v", base, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// openPG opens the test's schema from the test process.
func openPG(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// ms is the SQL of a timestamptz column as Unix milliseconds, the unit of
// the storm's rows.
func ms(col string) string {
	return "coalesce((extract(epoch from " + col + ") * 1000)::bigint, 0)"
}

// loadPostgres reads the rows of the test's schema.
func loadPostgres(t testing.TB, db *sql.DB) stormRows {
	t.Helper()
	query := func(q string, scan func(*sql.Rows) error) {
		t.Helper()
		rows, err := db.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := scan(rows); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	r := stormRows{attempts: map[int64][]attemptRow{}, cursors: map[string]cursorRow{}}
	query(`SELECT id, key, type, state, attempt, max_attempts, coalesce(schedule, ''), coalesce(item, ''),
		`+ms("scheduled_at")+`, payload::text, `+ms("run_at")+` FROM jobs ORDER BY id`, func(rows *sql.Rows) error {
		var j jobRow
		err := rows.Scan(&j.ID, &j.Key, &j.Type, &j.State, &j.Attempt, &j.MaxAttempts, &j.Schedule, &j.Item, &j.ScheduledAt, &j.Payload, &j.RunAt)
		r.jobs = append(r.jobs, j)
		return err
	})
	query(`SELECT job_id, attempt, worker, outcome, error FROM (
		SELECT job_id, attempt, worker, outcome, coalesce(error, '') AS error, 0 AS synthetic, id FROM attempts
		UNION ALL
		SELECT id, attempt, owner, 'done', '', 1, id FROM jobs j WHERE state = 'done' AND NOT EXISTS (
			SELECT 1 FROM attempts a WHERE a.job_id = j.id AND a.attempt = j.attempt AND a.outcome = 'done')) x
	ORDER BY synthetic, id`, func(rows *sql.Rows) error {
		var a attemptRow
		err := rows.Scan(&a.JobID, &a.Attempt, &a.Worker, &a.Outcome, &a.Error)
		r.attempts[a.JobID] = append(r.attempts[a.JobID], a)
		return err
	})
	query(`SELECT schedule, coalesce(item, ''), `+ms("scheduled_at")+`, reason FROM skips ORDER BY schedule, scheduled_at, item`, func(rows *sql.Rows) error {
		var s skipRow
		err := rows.Scan(&s.Schedule, &s.Item, &s.ScheduledAt, &s.Reason)
		r.skips = append(r.skips, s)
		return err
	})
	query(`SELECT schedule, `+ms("at")+`, paused FROM cursors`, func(rows *sql.Rows) error {
		var name string
		var at int64
		var c cursorRow
		err := rows.Scan(&name, &at, &c.Paused)
		c.At = time.UnixMilli(at).UTC()
		r.cursors[name] = c
		return err
	})
	return r
}

// node is one of the daemons of TestPostgresNodes, with its own clock.
type node struct {
	n      int
	offset time.Duration // its wall clock's error
	d      *daemon
}

// spawnNode starts daemon n of the site with its wall clock off by offset,
// through a clock-offset file of its own (see clockSite).
func spawnNode(t *testing.T, s *site, n int, offset time.Duration) *daemon {
	t.Helper()
	file := s.path(fmt.Sprintf("clock-offset-%d", n))
	writeOffset(t, file, offset)
	return s.spawnWith(s.db, []string{"SCHEDULER_TEST_CLOCK_OFFSET_FILE=" + file})
}

// TestPostgresNodes runs three daemons on one PostgreSQL database with the
// storm's schedules, each node's wall clock off by up to ±30 s, while CLI
// processes trigger runs concurrently, and SIGKILLs and SIGSTOPs nodes at
// random (one at a time, so that two stay alive). It checks the storm's
// invariants on the final rows: no instant materialised twice, every
// instant of the window run or skipped with a reason, every acknowledged
// trigger run, every job done or dead, no attempt started twice (two nodes
// never ran one claim), and it reports the re-executions, the at-least-once
// window after a stall or a kill.
func TestPostgresNodes(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	s := newSite(t, stormConfig)
	s.db = dsn
	db := openPG(t, dsn)

	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = &node{n: i + 1, offset: time.Duration(rand.IntN(60_001)-30_000) * time.Millisecond}
	}
	offsets := make([]string, len(nodes))
	for i, nd := range nodes {
		offsets[i] = nd.offset.String()
	}

	// The window starts at the cursors the first node creates, as its log
	// says; the others start once the schema exists.
	nodes[0].d = spawnNode(t, s, 1, nodes[0].offset)
	cursor0 := nodes[0].d.startedCursors(stormScheduleNames()...)
	for _, nd := range nodes[1:] {
		nd.d = spawnNode(t, s, nd.n, nd.offset)
	}
	for _, nd := range nodes {
		nd.d.waitMsg("scheduler started", 1)
	}

	ctx, stopTriggers := context.WithCancel(context.Background())
	a := &acks{keys: map[string]bool{}}
	var wg sync.WaitGroup
	defer func() {
		stopTriggers()
		wg.Wait()
	}()
	for g := range size.stormTriggerers {
		wg.Go(func() { triggerLoop(ctx, s, g, a) })
	}

	kills, stalls := 0, 0
	// stalledJobs counts the jobs the stalled nodes held when stopped;
	// unreclaimed, those still held a second after their lease expired.
	stalledJobs, unreclaimed := 0, 0
	for range size.kills {
		time.Sleep(300*time.Millisecond + time.Duration(rand.IntN(1700))*time.Millisecond) // a random instant
		nd := nodes[rand.IntN(len(nodes))]
		if nd.d.exited() {
			t.Fatalf("node %d exited by itself (%v):\n%s", nd.n, nd.d.err, nd.d.tail(30))
		}
		if rand.IntN(4) == 0 {
			// A stall past the lease (2s): the others reclaim its jobs; its
			// late results are fenced off. Just before it ends, count the
			// jobs it still holds whose lease expired over a second ago:
			// the others should have taken them back by then.
			owner := fmt.Sprintf("%%:%d:%%", nd.d.cmd.Process.Pid)
			nd.d.signal(syscall.SIGSTOP)
			held := countRows(t, db, `SELECT count(*) FROM jobs WHERE state = 'running' AND owner LIKE $1`, owner)
			time.Sleep(2500*time.Millisecond + time.Duration(rand.IntN(1000))*time.Millisecond) // the stall
			late := countRows(t, db, `SELECT count(*) FROM jobs WHERE state = 'running' AND owner LIKE $1
				AND lease_until < now() - interval '1 second'`, owner)
			nd.d.signal(syscall.SIGCONT)
			stalls++
			stalledJobs += held
			unreclaimed += late
			continue
		}
		nd.d.kill()
		kills++
		if strings.Contains(nd.d.log(), "panic") {
			t.Errorf("node %d logged a panic:\n%s", nd.n, nd.d.tail(30))
		}
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Millisecond) // random downtime
		nd.d = spawnNode(t, s, nd.n, nd.offset)
	}

	// Recovery: the schedules stop; the nodes, left alone, run everything
	// to the end, reclaiming what the killed ones held.
	stopTriggers()
	wg.Wait()
	for _, sc := range stormSchedules {
		s.mustCLI("-pause", sc.name)
	}
	unfinished := func() int {
		return countRows(t, db, `SELECT count(*) FROM jobs WHERE state NOT IN ('done', 'dead')`)
	}
	for round := 0; ; round++ {
		eventually(t, "every job done or dead", func() bool { return unfinished() == 0 })
		for _, nd := range nodes {
			if err := nd.d.stop(); err != nil {
				t.Errorf("node %d: %v", nd.n, err)
			}
		}
		// A beat pass that began before the pause may have committed after
		// the check: then run again.
		if unfinished() == 0 || round == 3 {
			break
		}
		for _, nd := range nodes {
			nd.d = spawnNode(t, s, nd.n, nd.offset)
		}
	}
	waitRecordersGone(t, s.record)

	f := checkStorm(t, loadPostgres(t, db), readRecord(t, s.record), cursor0, a)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, msg := range a.failures {
		t.Errorf("trigger failed: %s", msg)
	}
	t.Logf("stalls: the stopped nodes held %d jobs; %d of them were still held a second after their lease expired", stalledJobs, unreclaimed)
	t.Logf("PostgreSQL, 3 nodes (clock offsets %v), %s scale: %d SIGKILLs and %d SIGSTOP stalls survived; %d instant×item slots checked: %d run, %d skipped %v; "+
		"%d triggers acknowledged (%d jobs), %d trigger processes SIGKILLed and repeated; %d executions recorded, "+
		"%d re-executions after a kill or stall (at-least-once); %d dead; lost: %d",
		offsets, size.name, kills, stalls, f.slots, f.run, f.skipped, f.skipReasons, a.triggers, len(a.keys), a.killed,
		f.executions, f.reexecutions, f.dead, f.lost)
}

const nightlyConfig = `
[scheduler]
timezone = "UTC"
workers = 2
lease = "2s"
shutdown_grace = "2s"

[tasks.rec]
command = ["{{REC}}", "-file", "{{RECORD}}", "-sleep-max", "100ms"]

[[schedule]]
name = "nightly"
cron = "{{CRON}}"
task = "rec"
for_each = [ { customer = "acme" }, { customer = "globex" }, { customer = "initech" } ]
`

// TestPostgresNodeDownAtInstant is "every night at 03:00, one report per
// customer" on three nodes, one of which is killed just before the instant
// and stays down until the instant's jobs are done: the two others
// materialise the instant once and run each customer's job once, without
// the dead node. The nodes' clocks are off by up to ±30 s: the instant,
// 25 s after the test starts, would be skipped or early if a node's own
// clock decided it.
func TestPostgresNodeDownAtInstant(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	instant := time.Now().UTC().Truncate(time.Second).Add(25 * time.Second)
	cron := fmt.Sprintf("%d %d %d * * *", instant.Second(), instant.Minute(), instant.Hour())
	s := newSite(t, strings.ReplaceAll(nightlyConfig, "{{CRON}}", cron))
	s.db = dsn
	db := openPG(t, dsn)

	offsets := []time.Duration{-30 * time.Second, 17 * time.Second, 30 * time.Second}
	nodes := make([]*daemon, len(offsets))
	for i, off := range offsets {
		nodes[i] = spawnNode(t, s, i+1, off)
	}
	for _, d := range nodes {
		d.waitMsg("scheduler started", 1)
	}
	if wait := time.Until(instant.Add(-5 * time.Second)); wait > 0 {
		time.Sleep(wait) // until the kill instant, "03:55"
	} else {
		t.Fatalf("the nodes took until %s to start, past the kill instant %s: start-up too slow for this test", time.Now().UTC(), instant.Add(-5*time.Second))
	}
	down := nodes[0]
	downPID := down.cmd.Process.Pid
	down.kill()

	jobsOfInstant := func() []jobRow {
		var out []jobRow
		for _, j := range loadPostgres(t, db).jobs {
			if j.Schedule == "nightly" && j.ScheduledAt == instant.UnixMilli() {
				out = append(out, j)
			}
		}
		return out
	}
	eventually(t, "the instant's three jobs done", func() bool {
		js := jobsOfInstant()
		if len(js) != 3 {
			return false
		}
		for _, j := range js {
			if j.State != "done" {
				return false
			}
		}
		return true
	})
	// Done without the killed node: it comes back only now, "04:30".
	nodes[0] = spawnNode(t, s, 1, offsets[0])
	nodes[0].waitMsg("scheduler started", 1)
	for _, d := range nodes {
		if err := d.stop(); err != nil {
			t.Errorf("%s: %v", d.name, err)
		}
	}
	waitRecordersGone(t, s.record)

	rows := loadPostgres(t, db)
	rec := byKey(readRecord(t, s.record))
	var jobs []jobRow
	for _, j := range rows.jobs {
		if j.Schedule == "nightly" {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) != 3 {
		t.Fatalf("%d jobs of nightly, want 3 (one per customer, one instant): %+v", len(jobs), jobs)
	}
	var late time.Duration
	for _, j := range jobs {
		if j.ScheduledAt != instant.UnixMilli() {
			t.Errorf("job %d (%s) stands for %s, want the instant %s", j.ID, j.Key, rfc3339(j.ScheduledAt), instant.Format(time.RFC3339))
		}
		r := rec[j.Key]
		if r == nil || r.executions() != 1 || !r.succeeded(j.Attempt) {
			t.Errorf("job %d (%s): %d executions in the record, want one successful", j.ID, j.Key, r.executionsOrZero())
			continue
		}
		for _, a := range rows.attempts[j.ID] {
			if strings.Contains(a.Worker, fmt.Sprintf(":%d:", downPID)) {
				t.Errorf("job %d (%s) ran on the killed node (worker %s)", j.ID, j.Key, a.Worker)
			}
		}
		for _, starts := range r.starts {
			for _, e := range starts {
				if e.start.Before(instant) {
					t.Errorf("job %d (%s) started at %s, before its instant %s", j.ID, j.Key, e.start.UTC(), instant)
				}
				late = max(late, e.start.Sub(instant))
			}
		}
	}
	if len(rows.skips) != 0 {
		t.Errorf("skips recorded: %+v", rows.skips)
	}
	t.Logf("node down from instant-5s until the instant's jobs were done (clock offsets %v): 3 jobs, each run once by the live nodes, the last started %s after the instant",
		offsets, late.Round(time.Millisecond))
}
