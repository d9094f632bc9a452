package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const stormConfig = `
[scheduler]
workers = 4
shutdown_grace = "2s"
maintenance_every = "1s"
lease = "2s"

[tasks.rec]
command = ["{{REC}}", "-file", "{{RECORD}}", "-sleep-max", "{{.sleep}}"]
max_attempts = 8
backoff = "100ms"
max_backoff = "500ms"

[[schedule]]
name = "every"
cron = "@every 1s"
task = "rec"
payload = { sleep = "300ms" }

[[schedule]]
name = "seconds"
cron = "*/2 * * * * *"
task = "rec"
payload = { sleep = "400ms" }
for_each = [ { customer = "acme" }, { customer = "globex" }, { customer = "initech" } ]

[[schedule]]
name = "overlapping"
cron = "* * * * * *"
task = "rec"
payload = { sleep = "2500ms" }
for_each = [ { part = "1" }, { part = "2" } ]
overlap = "skip"

[[schedule]]
name = "manual"
cron = "0 0 1 1 *"
task = "rec"
payload = { sleep = "200ms" }
for_each = [ { region = "eu" }, { region = "us" } ]
`

// stormSchedules are the schedules of stormConfig whose instants fall in
// the test's window, with their fan-out items and the instants they fire
// at after a cursor.
var stormSchedules = []struct {
	name  string
	items []string
	next  func(after time.Time) time.Time
}{
	{"every", []string{""}, func(after time.Time) time.Time {
		// @every counts from the schedule's first cursor, a whole second.
		return after.Add(time.Second)
	}},
	{"seconds", []string{"customer=acme", "customer=globex", "customer=initech"}, func(after time.Time) time.Time {
		return after.Truncate(2 * time.Second).Add(2 * time.Second)
	}},
	{"overlapping", []string{"part=1", "part=2"}, func(after time.Time) time.Time {
		return after.Truncate(time.Second).Add(time.Second)
	}},
}

// stormScheduleNames returns the names of stormSchedules.
func stormScheduleNames() []string {
	var names []string
	for _, sc := range stormSchedules {
		names = append(names, sc.name)
	}
	return names
}

// acks collects the triggers the CLI acknowledged.
type acks struct {
	mu       sync.Mutex
	keys     map[string]bool // full job keys printed by -trigger
	triggers int             // trigger commands acknowledged
	killed   int             // trigger processes SIGKILLed mid-flight
	failures []string        // trigger runs that exited with an error
}

// ackLine is a job that -trigger enqueued, or that held its key already
// (listed under "trigger key ... was used before").
var ackLine = regexp.MustCompile(`(?m)^(?:enqueued job|  job) \d+ \(key (\S+)\)$`)

// triggerLoop runs -trigger processes one after another until ctx is done.
// One in ten is SIGKILLed at a random instant and then repeated with the
// same key, as an operator would after a crash, which must enqueue nothing
// twice.
func triggerLoop(ctx context.Context, s *site, g int, a *acks) {
	for n := 0; ctx.Err() == nil; n++ {
		key := fmt.Sprintf("storm-%d-%d", g, n)
		for try := 0; try < 10; try++ {
			pctx, cancel := context.WithCancel(context.Background())
			if try == 0 && rand.IntN(10) == 0 {
				time.AfterFunc(time.Duration(rand.IntN(40))*time.Millisecond, cancel)
			}
			r := s.cliContext(pctx, "-trigger", "manual", "-key", key, "-payload", `{"sleep":"150ms"}`)
			cancel()
			if r.code == 0 {
				m := ackLine.FindAllStringSubmatch(r.stdout, -1)
				a.mu.Lock()
				for _, k := range m {
					a.keys[k[1]] = true
				}
				if len(m) != 2 {
					a.failures = append(a.failures, fmt.Sprintf("trigger %s printed %d acknowledgements, want 2: %q", key, len(m), r.stdout))
				}
				a.triggers++
				a.mu.Unlock()
				break
			}
			a.mu.Lock()
			if r.code == -1 {
				a.killed++
			} else {
				a.failures = append(a.failures, fmt.Sprintf("trigger %s: %v", key, r))
			}
			a.mu.Unlock()
			if ctx.Err() != nil {
				break
			}
		}
		time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond) // pacing: a busy daemon, not a flood
	}
}

// TestKillStorm checks, after SIGKILLing the daemon at random instants
// (some during start-up) while @every, seconds-field and fan-out schedules
// run and concurrent CLI processes trigger runs (some of them SIGKILLed
// too):
//   - no (schedule, item, instant) is materialised twice, and every job of
//     an instant carries the dedup key schedule|item|instant;
//   - every instant of the window, cursor to cursor, is run or recorded as
//     skipped with a reason, for every item; nothing outside it appears;
//   - every acknowledged trigger ran;
//   - every job ends done (or dead), after the killed daemons' leases are
//     reclaimed; a done job's successful run is in the external record;
//   - attempts never exceed max_attempts, each execution in the record is an
//     attempt in the database, and no attempt number ran twice;
//   - PRAGMA integrity_check is ok.
func TestKillStorm(t *testing.T) {
	t.Parallel()
	s := newSite(t, stormConfig)

	ctx, stopTriggers := context.WithCancel(context.Background())
	a := &acks{keys: map[string]bool{}}
	var wg sync.WaitGroup
	defer func() {
		stopTriggers()
		wg.Wait()
	}()

	var cursor0 map[string]cursorRow
	kills, startupKills := 0, 0
	for i := range size.kills {
		d := s.spawn()
		if i == 0 {
			// The window starts at the cursors the first daemon creates,
			// as its log says: read from the file, they may already have
			// moved past a first instant when the daemon started just
			// before a second boundary. The triggers start once the
			// database exists (creating it concurrently is
			// TestConcurrentFirstUse).
			cursor0 = d.startedCursors(stormScheduleNames()...)
			for g := range size.stormTriggerers {
				wg.Go(func() { triggerLoop(ctx, s, g, a) })
			}
		}
		if i > 0 && rand.IntN(4) == 0 {
			// Kill during start-up: opening, migrating, first claim.
			time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond) // a random kill instant
			startupKills++
		} else {
			d.waitMsg("scheduler started", 1)
			time.Sleep(300*time.Millisecond + time.Duration(rand.IntN(2200))*time.Millisecond) // a random kill instant
		}
		if d.exited() {
			t.Fatalf("%s exited by itself (%v) before it was killed:\n%s", d.name, d.err, d.tail(30))
		}
		d.kill()
		kills++
		if strings.Contains(d.log(), "panic") {
			t.Errorf("%s logged a panic:\n%s", d.name, d.tail(30))
		}
		if rand.IntN(3) == 0 {
			time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond) // random downtime, well within misfire_grace
		}
	}

	// Recovery: a daemon that is not killed stops the schedules, waits for
	// the killed daemons' leases to expire and runs everything to the end.
	d := s.start()
	stopTriggers()
	wg.Wait()
	for _, sc := range stormSchedules {
		s.mustCLI("-pause", sc.name)
	}
	db := openDB(t, s.db, false)
	unfinished := func() int {
		return countRows(t, db, `SELECT count(*) FROM jobs WHERE state NOT IN ('done', 'dead')`)
	}
	for round := 0; ; round++ {
		eventually(t, "every job done or dead", func() bool { return unfinished() == 0 })
		if err := d.stop(); err != nil {
			t.Errorf("final daemon: %v", err)
		}
		// A beat pass that began before the pause may have committed after
		// the check: then run again.
		if unfinished() == 0 || round == 3 {
			break
		}
		d = s.start()
	}
	waitRecordersGone(t, s.record)

	checkIntegrity(t, db)
	f := checkStorm(t, loadSQLite(t, db), readRecord(t, s.record), cursor0, a)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, msg := range a.failures {
		t.Errorf("trigger failed: %s", msg)
	}
	t.Logf("kill storm (%s scale): %d SIGKILLs survived (%d during start-up); %d instant×item slots checked: %d run, %d skipped %v; "+
		"%d triggers acknowledged (%d jobs), %d trigger processes SIGKILLed and repeated; %d executions recorded, "+
		"%d re-executions after a kill (at-least-once); %d dead; lost: %d",
		size.name, kills, startupKills, f.slots, f.run, f.skipped, f.skipReasons, a.triggers, len(a.keys), a.killed,
		f.executions, f.reexecutions, f.dead, f.lost)
}

// stormFigures are the counts TestKillStorm reports.
type stormFigures struct {
	slots, run, skipped, lost int
	skipReasons               map[string]int
	executions, reexecutions  int
	dead                      int
}

var skipReasons = []string{"misfire", "overlap", "paused", "dst"}

// checkStorm checks the invariants of TestKillStorm (and of
// TestPostgresNodes) on the final rows and record.
func checkStorm(t *testing.T, rows stormRows, record []event, cursor0 map[string]cursorRow, a *acks) stormFigures {
	t.Helper()
	f := stormFigures{skipReasons: map[string]int{}}
	jobs, attempts, skips, cursors := rows.jobs, rows.attempts, rows.skips, rows.cursors
	rec := byKey(record)

	byKeyDB := map[string]jobRow{}
	type slot struct {
		schedule, item string
		at             int64
	}
	jobAt := map[slot]jobRow{}
	for _, j := range jobs {
		byKeyDB[j.Key] = j
		if j.manual() {
			continue
		}
		sl := slot{j.Schedule, j.Item, j.ScheduledAt}
		if prev, ok := jobAt[sl]; ok {
			t.Errorf("instant materialised twice: jobs %d (%s) and %d (%s)", prev.ID, prev.Key, j.ID, j.Key)
		}
		jobAt[sl] = j
		if want := j.Schedule + "|" + j.Item + "|" + rfc3339(j.ScheduledAt); j.Key != want {
			t.Errorf("job %d: key %q, want the dedup key %q", j.ID, j.Key, want)
		}
	}
	skipAt := map[slot]skipRow{}
	for _, sk := range skips {
		if !slices.Contains(skipReasons, sk.Reason) {
			t.Errorf("skip of %s at %s has reason %q", sk.Schedule, rfc3339(sk.ScheduledAt), sk.Reason)
		}
		skipAt[slot{sk.Schedule, sk.Item, sk.ScheduledAt}] = sk
	}

	// Every instant of the window is run or skipped; nothing else exists.
	expected := map[slot]bool{}
	for _, sc := range stormSchedules {
		from, to := cursor0[sc.name].At, cursors[sc.name].At
		// A window from the zero time would be walked second by second,
		// each instant a LOST error, until memory ran out.
		if _, ok := cursor0[sc.name]; !ok || to.Sub(from) > time.Hour {
			t.Fatalf("schedule %s: window %s..%s: no start cursor, or longer than any run of the test", sc.name, from, to)
		}
		if !cursors[sc.name].Paused {
			t.Errorf("schedule %s is not paused at the end", sc.name)
		}
		if to.Sub(from) < 5*time.Second {
			t.Errorf("schedule %s: window %s..%s is too short to prove anything", sc.name, from, to)
		}
		for at := sc.next(from); !at.After(to); at = sc.next(at) {
			for _, item := range sc.items {
				sl := slot{sc.name, item, at.UnixMilli()}
				expected[sl] = true
				f.slots++
				j, ran := jobAt[sl]
				sk, skipped := skipAt[sl]
				if !skipped {
					sk, skipped = skipAt[slot{sc.name, "", at.UnixMilli()}]
				}
				switch {
				case ran && skipped:
					t.Errorf("%s item %q at %s: both run (job %d) and skipped (%s)", sc.name, item, at.UTC().Format(time.RFC3339), j.ID, sk.Reason)
				case ran && rec[j.Key].executionsOrZero() == 0:
					f.lost++
					t.Errorf("LOST: %s item %q at %s: job %d is %s and its command never ran", sc.name, item, at.UTC().Format(time.RFC3339), j.ID, j.State)
				case ran:
					f.run++
				case skipped:
					f.skipped++
					f.skipReasons[sk.Reason]++
				default:
					f.lost++
					t.Errorf("LOST: %s item %q at %s: neither run nor skipped", sc.name, item, at.UTC().Format(time.RFC3339))
				}
			}
		}
	}
	for sl, j := range jobAt {
		if !expected[sl] {
			t.Errorf("job %d (%s) is outside the window or off the schedule's instants", j.ID, j.Key)
		}
	}

	// Every job ends done or dead, within its attempts, and the record
	// agrees with the attempt history.
	for _, j := range jobs {
		as := attempts[j.ID]
		r := rec[j.Key]
		if j.Attempt > j.MaxAttempts {
			t.Errorf("job %d (%s): attempt %d > max_attempts %d", j.ID, j.Key, j.Attempt, j.MaxAttempts)
		}
		numbers := map[int]bool{}
		released := map[int]bool{}
		dones := 0
		for _, at := range as {
			numbers[at.Attempt] = true
			if at.Attempt > j.MaxAttempts || at.Attempt < 1 {
				t.Errorf("job %d (%s): attempt row %d outside 1..%d", j.ID, j.Key, at.Attempt, j.MaxAttempts)
			}
			switch at.Outcome {
			case "done":
				dones++
				if at.Attempt != j.Attempt {
					t.Errorf("job %d (%s): done at attempt %d, job says attempt %d", j.ID, j.Key, at.Attempt, j.Attempt)
				}
			case "released":
				released[at.Attempt] = true
			}
		}
		switch j.State {
		case "done":
			if dones != 1 {
				t.Errorf("job %d (%s): done with %d done attempts in its history", j.ID, j.Key, dones)
			}
			if r == nil || !r.succeeded(j.Attempt) {
				f.lost++
				t.Errorf("LOST: job %d (%s) is done but the record has no successful run of attempt %d", j.ID, j.Key, j.Attempt)
			}
		case "dead":
			// Allowed only when kills used up every attempt: the command
			// itself never fails.
			f.dead++
			t.Logf("dead job %d (%s): %d executions in the record, history %+v", j.ID, j.Key, r.executionsOrZero(), as)
			for _, at := range as {
				if at.Outcome != "lease_expired" && at.Outcome != "stale" && at.Outcome != "released" {
					t.Errorf("job %d (%s) is dead after a failed attempt: %+v", j.ID, j.Key, as)
					break
				}
			}
		default:
			t.Errorf("job %d (%s) ends %s, want done or dead", j.ID, j.Key, j.State)
		}
		if r == nil {
			continue
		}
		for _, n := range r.attempts() {
			if !numbers[n] {
				t.Errorf("job %d (%s): the record shows attempt %d ran, the history does not know it", j.ID, j.Key, n)
			}
			if n > j.MaxAttempts {
				t.Errorf("job %d (%s): attempt %d ran, above max_attempts %d", j.ID, j.Key, n, j.MaxAttempts)
			}
			if len(r.starts[n]) > 1 && !released[n] {
				t.Errorf("job %d (%s): attempt %d started %d times", j.ID, j.Key, n, len(r.starts[n]))
			}
		}
		f.executions += r.executions()
		f.reexecutions += r.executions() - 1
	}
	for key := range rec {
		if _, ok := byKeyDB[key]; !ok {
			t.Errorf("the record shows key %s ran, the database has no such job", key)
		}
	}

	// Every acknowledged trigger ran.
	a.mu.Lock()
	defer a.mu.Unlock()
	for key := range a.keys {
		j, ok := byKeyDB[key]
		switch {
		case !ok:
			f.lost++
			t.Errorf("LOST: acknowledged trigger %s has no job", key)
		case j.State != "done" || rec[key] == nil || !rec[key].succeeded(j.Attempt):
			f.lost++
			t.Errorf("LOST: acknowledged trigger %s (job %d, %s) has no successful run in the record", key, j.ID, j.State)
		}
	}
	return f
}
