package chaos

import (
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// writeOffset sets the offset that a clock-offset file gives the wall
// clock of the processes reading it (see clockSite), by a rename, so that
// no process reads half a file.
func writeOffset(t testing.TB, file string, d time.Duration) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(d.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// clockSteps are the steps of the tests below, in order: forwards by more
// than a lease, forwards by more than the misfire grace of the nodes'
// test, and back by as much.
var clockSteps = []time.Duration{10 * time.Second, 60 * time.Second, -10 * time.Second, -60 * time.Second}

// stepsConfig runs a command of 6 s, twice a lease of 3 s, at every
// {{EVERY}} seconds, so that commands run across every step.
const stepsConfig = `
[scheduler]
workers = 4
lease = "3s"
misfire_grace = "{{GRACE}}"
maintenance_every = "1s"
shutdown_grace = "2s"

[tasks.long]
command = ["{{REC}}", "-file", "{{RECORD}}", "-sleep", "6s"]

[[schedule]]
name = "long"
cron = "*/{{EVERY}} * * * * *"
task = "long"
`

// running returns the commands of the record that started and have not
// ended.
func running(evs []event) map[string]bool {
	out := map[string]bool{}
	for _, e := range evs {
		k := fmt.Sprintf("%s#%d", e.key, e.attempt)
		if e.kind == "start" {
			out[k] = true
		} else {
			delete(out, k)
		}
	}
	return out
}

// stepClock makes one step of clockSteps: it waits until cond holds of the
// running commands (that commands run across the step), sets the offset,
// then waits until every command that ran across the step ended, which
// they do only if their leases held, and returns how many did.
func stepClock(t *testing.T, record string, set func(time.Duration), offset time.Duration, cond func(map[string]bool) bool) int {
	t.Helper()
	var across map[string]bool
	waitRecord(t, record, "commands running before the step", func(evs []event) bool {
		across = running(evs)
		return cond(across)
	})
	set(offset)
	waitRecord(t, record, fmt.Sprintf("the commands running across the step to %v to end", offset), func(evs []event) bool {
		now := running(evs)
		for k := range across {
			if now[k] {
				return false
			}
		}
		return true
	})
	return len(across)
}

// checkSteps checks the rows and the record after clockSteps: every instant
// of the schedule long from cursor0 to the last cursor was materialised
// once and run once, or skipped while paused at the end, none as a
// misfire; no command ran twice; no lease was taken back; and no instant
// was materialised or started before it was due (by the clock that
// decides: the daemons' on one host, the server's with nodes). It returns
// how many instants ran.
func checkSteps(t *testing.T, db *sql.DB, rows stormRows, record []event, cursor0 time.Time, every time.Duration) int {
	t.Helper()
	jobs := map[int64]jobRow{}
	for _, j := range rows.jobs {
		if j.Schedule != "long" || j.ScheduledAt == 0 {
			t.Errorf("job %d (%s) is not an instant of long", j.ID, j.Key)
			continue
		}
		if _, dup := jobs[j.ScheduledAt]; dup {
			t.Errorf("instant %s materialised twice", rfc3339(j.ScheduledAt))
		}
		jobs[j.ScheduledAt] = j
		if j.State != "done" {
			t.Errorf("job %d (%s) ended %s, want done", j.ID, j.Key, j.State)
		}
	}
	skipped := map[int64]string{}
	for _, s := range rows.skips {
		skipped[s.ScheduledAt] = s.Reason
		if s.Reason != "paused" {
			t.Errorf("instant %s skipped (%s): want every instant run", rfc3339(s.ScheduledAt), s.Reason)
		}
	}
	last := rows.cursors["long"].At
	for at := cursor0.Truncate(every).Add(every); !at.After(last); at = at.Add(every) {
		_, ran := jobs[at.UnixMilli()]
		_, skip := skipped[at.UnixMilli()]
		if ran == skip {
			t.Errorf("instant %s: run %v, skipped %v; want one of the two", at.Format(time.RFC3339), ran, skip)
		}
	}
	for id, as := range rows.attempts {
		for _, a := range as {
			if a.Outcome != "done" {
				t.Errorf("job %d attempt %d by %s: %s (%s), want done", id, a.Attempt, a.Worker, a.Outcome, a.Error)
			}
		}
	}
	for key, r := range byKey(record) {
		if r.executions() != 1 || !r.succeeded(1) {
			t.Errorf("%s: %d executions, want one, ended with success", key, r.executions())
		}
	}
	if n := countRows(t, db, `SELECT count(*) FROM jobs WHERE created_at < scheduled_at OR started_at < scheduled_at`); n != 0 {
		t.Errorf("%d instants materialised or started before they were due", n)
	}
	return len(jobs)
}

// TestClockStepsOnOneHost steps the wall clock of two daemons sharing a
// SQLite file (one host: both read one clock-offset file) by clockSteps
// while commands of 6 s run on leases of 3 s: forwards past every lease's
// end, and back. No lease of a running command is taken back and no
// command runs twice; every instant runs once, none before it is due by
// the host's clock, none skipped as a misfire (the grace, 2 m, covers the
// forward steps: the instants they pass are late, and run).
func TestClockStepsOnOneHost(t *testing.T) {
	t.Parallel()
	const every = 3 * time.Second
	s, set := clockSite(t, strings.NewReplacer("{{GRACE}}", "2m", "{{EVERY}}", "3").Replace(stepsConfig))
	a := s.start()
	cursor0 := a.startedCursors("long")["long"].At
	b := s.start()
	db := openDB(t, s.db, false)

	offset, across := time.Duration(0), []int{}
	for _, step := range clockSteps {
		offset += step
		// No job waits at the step: after a step back, one would wait for
		// the clock to come back to its instant, as it should, and hold
		// up the test.
		across = append(across, stepClock(t, s.record, set, offset, func(r map[string]bool) bool {
			return len(r) >= 2 && countRows(t, db, `SELECT count(*) FROM jobs WHERE state = 'pending'`) == 0
		}))
	}
	s.mustCLI("-pause", "long")
	eventually(t, "every job done", func() bool {
		return countRows(t, db, `SELECT count(*) FROM jobs WHERE state != 'done'`) == 0
	})
	seen := 0
	for _, d := range []*daemon{a, b} {
		if err := d.stop(); err != nil {
			t.Errorf("%s: %v", d.name, err)
		}
		if n := d.count("job lease reclaimed"); n != 0 {
			t.Errorf("%s took back %d leases", d.name, n)
		}
		seen += d.count("clock stepped")
	}
	if seen == 0 {
		t.Error(`no daemon logged "clock stepped": the test's clock hook is not in use`)
	}
	waitRecordersGone(t, s.record)
	n := checkSteps(t, db, loadSQLite(t, db), readRecord(t, s.record), cursor0, every)
	if !t.Failed() {
		t.Logf("one host, two daemons, steps %v: commands running across each step %v, no lease taken back, %d steps noticed by the pools; "+
			"%d instants, each run once, none early, no misfire", clockSteps, across, seen, n)
	}
}

// TestPostgresNodeClockSteps steps the wall clock of one of three nodes on
// PostgreSQL by clockSteps while commands of 6 s run on leases of 3 s, the
// stepped node holding some at each step. The server's clock decides:
// the stepped node takes no other node's lease, its own heartbeats go on
// (none of its leases is taken back), no command runs twice, and every
// instant runs once, none early by the server's clock (the recorder's,
// on the same host), none skipped as a misfire (the grace is 10 s, under
// the forward step of 60 s).
func TestPostgresNodeClockSteps(t *testing.T) {
	t.Parallel()
	const every = 2 * time.Second
	dsn := pgSchema(t)
	s := newSite(t, strings.NewReplacer("{{GRACE}}", "10s", "{{EVERY}}", "2").Replace(stepsConfig))
	s.db = dsn
	db := openPG(t, dsn)

	nodes := make([]*daemon, 3)
	nodes[0] = spawnNode(t, s, 1, 0)
	cursor0 := nodes[0].startedCursors("long")["long"].At
	for i := 1; i < len(nodes); i++ {
		nodes[i] = spawnNode(t, s, i+1, 0)
	}
	for _, d := range nodes {
		d.waitMsg("scheduler started", 1)
	}
	stepped := nodes[0]
	file := s.path("clock-offset-1")
	owner := fmt.Sprintf("%%:%d:%%", stepped.cmd.Process.Pid)

	offset, across := time.Duration(0), []int{}
	for _, step := range clockSteps {
		offset += step
		// The stepped node holds a running job's lease at the step.
		across = append(across, stepClock(t, s.record, func(d time.Duration) { writeOffset(t, file, d) }, offset,
			func(r map[string]bool) bool {
				return len(r) >= 2 && countRows(t, db, `SELECT count(*) FROM jobs WHERE state = 'running' AND owner LIKE $1`, owner) > 0
			}))
	}
	s.mustCLI("-pause", "long")
	eventually(t, "every job done", func() bool {
		return countRows(t, db, `SELECT count(*) FROM jobs WHERE state != 'done'`) == 0
	})
	for _, d := range nodes {
		if err := d.stop(); err != nil {
			t.Errorf("%s: %v", d.name, err)
		}
		if n := d.count("job lease reclaimed"); n != 0 {
			t.Errorf("%s took back %d leases", d.name, n)
		}
	}
	waitRecordersGone(t, s.record)
	rows := loadPostgres(t, db)
	record := readRecord(t, s.record)
	n := checkSteps(t, db, rows, record, cursor0, every)
	var late time.Duration
	steppedRuns := 0
	for _, e := range record {
		if e.kind != "start" {
			continue
		}
		at, err := time.Parse(time.RFC3339, e.scheduledAt)
		if err != nil {
			t.Errorf("start of %s: scheduled at %q: %v", e.key, e.scheduledAt, err)
			continue
		}
		if e.start.Before(at) {
			t.Errorf("%s started at %s, %v before its instant", e.key, e.start.UTC().Format(time.RFC3339Nano), at.Sub(e.start))
		}
		late = max(late, e.start.Sub(at))
	}
	for _, as := range rows.attempts {
		for _, a := range as {
			if strings.Contains(a.Worker, fmt.Sprintf(":%d:", stepped.cmd.Process.Pid)) {
				steppedRuns++
			}
		}
	}
	if !t.Failed() {
		t.Logf("PostgreSQL, three nodes, one stepped by %v: commands running across each step %v, %d run by the stepped node, no lease taken back; "+
			"%d instants, each run once, none early (the latest start %v after its instant), no misfire",
			clockSteps, across, steppedRuns, n, late.Round(time.Millisecond))
	}
}
