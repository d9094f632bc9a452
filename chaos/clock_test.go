package chaos

import (
	"database/sql"
	"fmt"
	"sort"
	"testing"
	"time"
)

// clockSite makes a site whose processes read their wall clock through the
// test-only offset file, starting at offset 0.
func clockSite(t *testing.T, config string) (*site, func(time.Duration)) {
	t.Helper()
	s := newSite(t, config)
	offsetFile := s.path("clock-offset")
	s.env = append(s.env, "SCHEDULER_TEST_CLOCK_OFFSET_FILE="+offsetFile)
	set := func(d time.Duration) {
		t.Helper()
		writeOffset(t, offsetFile, d)
	}
	set(0)
	return s, set
}

// midMinuteOffset returns an offset of about d that puts the shifted clock
// at second 30 of a minute, so that every minute instant it passes is half a
// minute late: far beyond the 1s misfire grace, whatever the start-up takes.
func midMinuteOffset(d time.Duration) time.Duration {
	target := time.Now().Add(d)
	return d + time.Duration(30-target.Second())*time.Second - time.Duration(target.Nanosecond())
}

// outcome is what became of the instants of one schedule between two
// cursors.
type outcome struct {
	instants []time.Time
	run      []time.Time
	skipped  map[string]int
}

// instantsOutcome classifies every instant of a schedule (spaced by step
// from from, exclusive, to to, inclusive) as run or skipped, failing the
// test for an instant that is both or neither, or one materialised twice.
func instantsOutcome(t *testing.T, db *sql.DB, schedule string, from, to time.Time, step time.Duration) outcome {
	t.Helper()
	o := outcome{skipped: map[string]int{}}
	jobs := map[int64]int{}
	for _, j := range loadJobs(t, db) {
		if j.Schedule == schedule && !j.manual() {
			jobs[j.ScheduledAt]++
		}
	}
	skips := map[int64]string{}
	for _, sk := range loadSkips(t, db) {
		if sk.Schedule == schedule {
			skips[sk.ScheduledAt] = sk.Reason
		}
	}
	seen := 0
	// Minute instants sit on minute boundaries; @every instants on whole
	// seconds from the cursor, itself a whole second.
	for at := from.Truncate(step).Add(step); !at.After(to); at = at.Add(step) {
		o.instants = append(o.instants, at)
		n, reason := jobs[at.UnixMilli()], skips[at.UnixMilli()]
		switch {
		case n > 1:
			t.Errorf("%s at %s materialised %d times", schedule, at.Format(time.RFC3339), n)
		case n == 1 && reason != "":
			t.Errorf("%s at %s both run and skipped (%s)", schedule, at.Format(time.RFC3339), reason)
		case n == 1:
			o.run = append(o.run, at)
		case reason != "":
			o.skipped[reason]++
		default:
			t.Errorf("LOST: %s at %s neither run nor skipped", schedule, at.Format(time.RFC3339))
		}
		if n > 0 {
			seen++
		}
	}
	if seen != len(jobs) {
		t.Errorf("%s: %d instants have jobs outside %s..%s", schedule, len(jobs)-seen, from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	return o
}

// waitClearOfMinute waits until the next minute boundary is at least 20s
// away. The minute schedules' windows start at cursors read after the
// daemon started; a minute instant run on time in between would be a job
// before the window.
func waitClearOfMinute(t *testing.T) {
	t.Helper()
	eventually(t, "a time clear of the next minute boundary", func() bool { return time.Now().Second() < 40 })
}

// newest reports whether run is exactly the last len(run) of instants.
func newest(run, instants []time.Time) bool {
	if len(run) > len(instants) {
		return false
	}
	tail := instants[len(instants)-len(run):]
	for i := range run {
		if !run[i].Equal(tail[i]) {
			return false
		}
	}
	return true
}

const catchUpConfig = `
[scheduler]
misfire_grace = "1s"
workers = 4

[tasks.rec]
command = ["{{REC}}", "-file", "{{RECORD}}"]

[[schedule]]
name = "latest"
cron = "* * * * *"
task = "rec"
catch_up = "latest"

[[schedule]]
name = "all"
cron = "* * * * *"
task = "rec"
catch_up = "all"
catch_up_limit = 5

[[schedule]]
name = "none"
cron = "* * * * *"
task = "rec"
catch_up = "none"
`

// checkCatchUp checks the instants of the three catch_up schedules of
// catchUpConfig between the cursors before and after: the newest one runs
// for latest, the newest five for all (limit 5), none for none; every other
// instant is skipped as a misfire; nothing is materialised twice, and the
// record shows each run executed once.
func checkCatchUp(t *testing.T, db *sql.DB, record []event, before, after map[string]cursorRow) string {
	t.Helper()
	want := map[string]int{"latest": 1, "all": 5, "none": 0}
	var figures string
	for _, name := range []string{"latest", "all", "none"} {
		o := instantsOutcome(t, db, name, before[name].At, after[name].At, time.Minute)
		if len(o.instants) < 10 {
			t.Fatalf("%s: only %d instants missed; the test needs more than the catch-up limit", name, len(o.instants))
		}
		if len(o.run) != want[name] || !newest(o.run, o.instants) {
			t.Errorf("catch_up %s: %d missed instants, ran %v, want the newest %d", name, len(o.instants), o.run, want[name])
		}
		if o.skipped["misfire"] != len(o.instants)-want[name] || len(o.skipped) > 1 {
			t.Errorf("catch_up %s: skips %v, want %d misfires", name, o.skipped, len(o.instants)-want[name])
		}
		rec := byKey(record)
		for _, at := range o.run {
			key := name + "||" + at.UTC().Format(time.RFC3339)
			if r := rec[key]; r == nil || r.executions() != 1 {
				t.Errorf("catch_up %s: run %s is not in the record exactly once", name, key)
			}
		}
		figures += fmt.Sprintf(" %s: %d missed, %d run;", name, len(o.instants), len(o.run))
	}
	return figures
}

// TestDowntimeCatchUp checks each catch_up policy after downtime: the
// daemon is stopped, half an hour passes (by the test clock), and it starts
// again. latest runs the newest missed instant, all the newest
// catch_up_limit, none nothing; every other missed instant is recorded as
// a misfire skip, none is materialised twice.
func TestDowntimeCatchUp(t *testing.T) {
	t.Parallel()
	s, setOffset := clockSite(t, catchUpConfig)
	waitClearOfMinute(t)
	d := s.start()
	eventually(t, "cursors", func() bool { return len(tryCursors(s.db)) == 3 })
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	db := openDB(t, s.db, false)
	before := loadCursors(t, db)

	setOffset(midMinuteOffset(30 * time.Minute))
	d = s.start()
	var after map[string]cursorRow
	eventually(t, "the beat to catch up", func() bool {
		after = loadCursors(t, db)
		for name, c := range before {
			if after[name].At.Sub(c.At) < 20*time.Minute {
				return false
			}
		}
		return countRows(t, db, `SELECT count(*) FROM jobs WHERE state != 'done'`) == 0
	})
	waitRecord(t, s.record, "the catch-up runs to end", func(evs []event) bool { return countKind(evs, "end", "") >= 6 })
	if err := d.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	after = loadCursors(t, db)
	figures := checkCatchUp(t, db, readRecord(t, s.record), before, after)
	t.Logf("downtime of 30m:%s", figures)
}

// TestClockJumps checks the beat against wall-clock jumps of a running
// daemon. Forward by half an hour: the minute schedules follow their
// catch_up policy as after downtime, and the @every 1s schedule runs at
// most the instants still within misfire_grace and skips the rest. Backward
// by 10s: nothing is materialised while the clock is behind the cursor (no
// instant is materialised before it is due by the daemon's clock), then the
// ticks resume from the cursor. Across both, every tick instant is run or
// skipped exactly once and each run executes once.
func TestClockJumps(t *testing.T) {
	t.Parallel()
	s, setOffset := clockSite(t, catchUpConfig+`
[[schedule]]
name = "tick"
cron = "@every 1s"
task = "rec"
`)
	waitClearOfMinute(t)
	d := s.start()
	db := openDB(t, s.db, false)
	// The window starts at the cursors the daemon creates, as its log says:
	// read from the file, the tick cursor may already have moved past a
	// first instant.
	start := d.startedCursors("latest", "all", "none", "tick")
	waitRecord(t, s.record, "two ticks", func(evs []event) bool { return countKind(evs, "end", "tick|") >= 2 })

	// Forward. The minute schedules' window starts at their cursors just
	// before the jump; no minute instant may fall between reading them and
	// the jump.
	eventually(t, "a time well clear of a minute boundary", func() bool { return time.Now().Second() < 55 })
	before := map[string]cursorRow{}
	for name, c := range loadCursors(t, db) {
		if name != "tick" {
			before[name] = c
		}
	}
	offset := midMinuteOffset(30 * time.Minute)
	setOffset(offset)
	jumpedAt := time.Now().Add(offset)
	var afterJump map[string]cursorRow
	eventually(t, "the beat to pass the forward jump", func() bool {
		afterJump = loadCursors(t, db)
		for name, c := range start {
			if afterJump[name].At.Sub(c.At) < 20*time.Minute {
				return false
			}
		}
		return true
	})

	// The minute schedules' part is over: no later on-time minute may blur
	// it.
	for name := range before {
		s.mustCLI("-pause", name)
	}

	// Backward: the clock is 10s behind the tick cursor for a while.
	// A pass that read the clock just before the jump may still move the
	// cursor one instant.
	c := loadCursors(t, db)["tick"].At.Add(time.Second)
	setOffset(offset - 10*time.Second)
	holds(t, 6*time.Second, "nothing materialised while the clock is behind the cursor", func() error {
		if now := loadCursors(t, db)["tick"].At; now.After(c) {
			return fmt.Errorf("tick cursor moved from %s to %s", c.Format(time.RFC3339), now.Format(time.RFC3339))
		}
		return nil
	})
	waitRecord(t, s.record, "ticks beyond the cursor after the clock caught up", func(evs []event) bool {
		n := 0
		for _, e := range evs {
			if at, err := time.Parse(time.RFC3339, e.scheduledAt); err == nil && e.kind == "end" && at.After(c.Add(2*time.Second)) {
				n++
			}
		}
		return n >= 2
	})
	s.mustCLI("-pause", "tick")
	eventually(t, "all runs done", func() bool {
		return countRows(t, db, `SELECT count(*) FROM jobs WHERE state != 'done'`) == 0
	})
	if err := d.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	waitRecordersGone(t, s.record)

	record := readRecord(t, s.record)
	final := loadCursors(t, db)
	figures := checkCatchUp(t, db, record, before, afterJump)

	tick := instantsOutcome(t, db, "tick", start["tick"].At, final["tick"].At, time.Second)
	late := 0
	for _, at := range tick.run {
		if at.After(start["tick"].At.Add(time.Minute)) && at.Before(jumpedAt.Add(-2*time.Second)) {
			late++
		}
	}
	if late > 0 {
		t.Errorf("tick: %d instants from inside the forward jump ran; latest with instants on time runs none of them", late)
	}
	rec := byKey(record)
	for _, j := range loadJobs(t, db) {
		if j.Schedule == "tick" && j.ScheduledAt > 0 {
			if r := rec[j.Key]; r == nil || r.executions() != 1 {
				t.Errorf("tick %s: not executed exactly once", j.Key)
			}
		}
	}
	var created []int64
	rows, err := db.Query(`SELECT created_at - scheduled_at FROM jobs WHERE schedule = 'tick' AND key NOT LIKE '%|manual|%'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d int64
		rows.Scan(&d)
		created = append(created, d)
	}
	rows.Close()
	sort.Slice(created, func(i, j int) bool { return created[i] < created[j] })
	if len(created) > 0 && created[0] < 0 {
		t.Errorf("a tick was materialised %dms before its instant, by the daemon's clock", -created[0])
	}
	t.Logf("clock jumps: forward 30m:%s tick: %d instants, %d run, skipped %v; backward 10s: checked for early and repeated instants",
		figures, len(tick.instants), len(tick.run), tick.skipped)
}
