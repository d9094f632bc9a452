package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestNextCountsEveryFromTheCursor: -next and -status count @every runs
// from the schedule's cursor in the database, as the beat does, and print
// the cursor's fraction of a second; without a database -next says its runs
// are counted from now.
func TestNextCountsEveryFromTheCursor(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "every"
cron = "@every 10s"
task = "rec"
`)
	_, errs, code := cli(t, dir, "-next", "every")
	if code != 0 || !strings.Contains(errs, "counted from now") {
		t.Errorf("-next without a database: exit %d, stderr %q; want 0 and a note that runs are counted from now", code, errs)
	}
	out, errs, _ := cli(t, dir, "-next", "every", "-from", "2020-01-01T00:00:30Z", "-n", "2")
	if want := "2020-01-01T00:00:40Z\n2020-01-01T00:00:50Z\n"; out != want || !strings.Contains(errs, "counted from -from") {
		t.Errorf("-next every -from without a database = %q (stderr %q), want %q and a note", out, errs, want)
	}

	ctx := context.Background()
	q, err := engine.Open(ctx, filepath.Join(dir, "scheduler.db"), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cursor := time.Date(2020, 1, 1, 0, 0, 1, 250e6, time.UTC)
	if _, err := q.Advance(ctx, store.Advance{Schedule: "every", To: cursor}); err != nil {
		t.Fatal(err)
	}
	q.Close()

	onSeries := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d1\.25Z$`)
	start := time.Now()
	out, errs, code = cli(t, dir, "-next", "every", "-n", "3")
	end := time.Now()
	lines := strings.Fields(out)
	if code != 0 || len(lines) != 3 {
		t.Fatalf("-next every: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	var prev time.Time
	for i, l := range lines {
		if !onSeries.MatchString(l) {
			t.Errorf("-next every run %d = %s, want cursor+k*10s (seconds ending in 1.25)", i, l)
		}
		at, err := time.Parse(time.RFC3339Nano, l)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && (!at.After(start.Add(-time.Second)) || at.After(end.Add(10*time.Second))) {
			t.Errorf("-next every first run %s, want the first instant of the series after now (%s)", l, start.UTC())
		}
		if i > 0 && at.Sub(prev) != 10*time.Second {
			t.Errorf("-next every: %s then %s, want 10s apart", prev, at)
		}
		prev = at
	}

	out = mustCLI(t, dir, "-next", "every", "-from", "2020-01-01T00:00:30Z", "-n", "2")
	if want := "2020-01-01T00:00:31.25Z\n2020-01-01T00:00:41.25Z\n"; out != want {
		t.Errorf("-next every -from = %q, want %q", out, want)
	}

	var rep statusReport
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Schedules) != 1 || !onSeries.MatchString(deref(rep.Schedules[0].NextRun)) {
		t.Errorf("-status -json schedules = %+v, want the next run on the cursor's series", rep.Schedules)
	}
	if out := mustCLI(t, dir, "-status"); !regexp.MustCompile(`(?m)^every .*:\d1\.25Z$`).MatchString(out) {
		t.Errorf("-status next run is not on the cursor's series:\n%s", out)
	}
}

// TestNextFromMarksDaylightSaving: -next -from lists runs across a
// transition and marks those that a daylight-saving rule moved or folded,
// in text and JSON; -n goes to 100000.
func TestNextFromMarksDaylightSaving(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[scheduler]
timezone = "America/New_York"
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "hourly"
cron = "0 * * * *"
task = "rec"
[[schedule]]
name = "nightly"
cron = "30 2 * * *"
task = "rec"
[[schedule]]
name = "late"
cron = "30 1 * * *"
task = "rec"
[[schedule]]
name = "often"
cron = "@every 1s"
task = "rec"
`)
	var got []nextView
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-next", "hourly", "-from", "2026-11-01", "-n", "4", "-json")), &got); err != nil {
		t.Fatal(err)
	}
	want := []nextView{
		{At: "2026-11-01T00:00:00-04:00"},
		{At: "2026-11-01T01:00:00-04:00"},
		{At: "2026-11-01T01:00:00-05:00", DST: "folded"},
		{At: "2026-11-01T02:00:00-05:00"},
	}
	if len(got) != len(want) {
		t.Fatalf("-next hourly -json = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].At != want[i].At || got[i].DST != want[i].DST || (got[i].DST != "") != (got[i].Note != "") {
			t.Errorf("-next hourly -json run %d = %+v, want %+v with a note when marked", i, got[i], want[i])
		}
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-next", "hourly", "-from", "2026-11-01T00:30", "-n", "3"},
			"2026-11-01T01:00:00-04:00\n2026-11-01T01:00:00-05:00  folded: second 01:00 of the day (clocks went back from 02:00 to 01:00): runs again\n2026-11-01T02:00:00-05:00\n"},
		{[]string{"-next", "nightly", "-from", "2026-03-08", "-n", "2"},
			"2026-03-08T03:00:00-04:00  moved: 02:30 did not exist (clocks jumped from 02:00 to 03:00): runs at the jump\n2026-03-09T02:30:00-04:00\n"},
		{[]string{"-next", "late", "-from", "2026-11-01T01:30:00-04:00", "-n", "1"},
			"2026-11-01T01:30:00-04:00  folded: 01:30 occurs twice (clocks go back from 02:00 to 01:00): runs once; the repeat at 2026-11-01T01:30:00-05:00 is skipped\n"},
	} {
		if out := mustCLI(t, dir, tt.args...); out != tt.want {
			t.Errorf("scheduler %v =\n%s\nwant\n%s", tt.args, out, tt.want)
		}
	}

	// An @every schedule, the cheapest to list under the race detector.
	out := mustCLI(t, dir, "-next", "often", "-from", "2026-01-01T00:00:00Z", "-n", "100000")
	if n := strings.Count(out, "\n"); n != 100000 {
		t.Errorf("-next -n 100000 printed %d lines", n)
	}
	for _, args := range [][]string{
		{"-next", "hourly", "-n", "100001"},
		{"-next", "hourly", "-from", "tomorrow"},
		{"-next", "hourly", "-from", "2026-11-01T25:00"},
		{"-check", "-from", "2026-11-01"},
	} {
		if _, errs, code := cli(t, dir, args...); code != 2 || errs == "" {
			t.Errorf("scheduler %v: exit %d, stderr %q; want 2 and a message", args, code, errs)
		}
	}
}

// TestSixFieldCronWithOneStarTooManyWarns: "0 3 * * * *" loads (it is valid
// cron: minute 3 of every hour) but -check and the daemon warn, naming the
// file, line, schedule and field, and what was probably meant.
func TestSixFieldCronWithOneStarTooManyWarns(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "nightly"
task = "rec"
cron = "0 3 * * * *"
`)
	want := `schedules.toml:7: schedule "nightly": field cron: "0 3 * * * *" has six fields`
	out, errs, code := cli(t, dir, "-check")
	if code != 0 || !strings.Contains(out, "nightly") {
		t.Errorf("-check: exit %d, stdout %q; want 0 and the schedule", code, out)
	}
	if !strings.Contains(errs, "warning: "+want) || !strings.Contains(errs, `write "0 3 * * *"`) {
		t.Errorf("-check stderr = %q, want a warning %q suggesting \"0 3 * * *\"", errs, want)
	}
	d := startDaemon(t, dir, nil)
	log := d.waitLog("config warning")
	if !strings.Contains(log, "line=7") || !strings.Contains(log, "schedule=nightly") || !strings.Contains(log, "field=cron") {
		t.Errorf("daemon log lacks the warning's line, schedule or field:\n%s", log)
	}
}

// TestNextSaysWhenTheFileIsNotWhatTheDaemonRuns: -next counts from the
// file, and says on stderr, as -status's config line does, when the file
// changed since the daemon loaded it or the daemon runs another file;
// nothing when the daemon runs the file as it is.
func TestNextSaysWhenTheFileIsNotWhatTheDaemonRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, db := filepath.Join(dir, "schedules.toml"), filepath.Join(dir, "s.db")
	loaded := "[tasks.t]\ncommand = [\"true\"]\n[[schedule]]\nname = \"s\"\ncron = \"0 3 * * *\"\ntask = \"t\"\n"
	writeFile(t, path, loaded)
	q, err := engine.Open(t.Context(), db, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	store := func(file, data string) {
		t.Helper()
		if _, err := q.SaveConfig(t.Context(), file, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	next := func(args ...string) (stdout, stderr string) {
		t.Helper()
		var out, errb strings.Builder
		err := Run(t.Context(), append([]string{"-config", path, "-db", db, "-next", "s", "-n", "1"}, args...), &out, &errb, nil, Options{})
		if err != nil {
			t.Fatalf("-next: %v\n%s", err, errb.String())
		}
		return out.String(), errb.String()
	}

	store(path, loaded)
	if _, errs := next(); errs != "" {
		t.Errorf("-next of the file the daemon runs says on stderr:\n%s", errs)
	}
	writeFile(t, path, strings.Replace(loaded, "0 3 * * *", "0 4 * * *", 1))
	out, errs := next()
	if want := "config: " + path + " changed since the daemon loaded it at "; !strings.HasPrefix(errs, want) ||
		!strings.HasSuffix(errs, "the daemon has not reloaded it yet; these runs are of "+path+"\n") {
		t.Errorf("-next of a changed file says on stderr:\n%s\nwant %q... and which file the runs are of", errs, want)
	}
	if !strings.Contains(out, "T04:00:00Z") {
		t.Errorf("-next of a changed file = %q, want the file's 04:00 run", out)
	}
	if out, errs := next("-json"); !json.Valid([]byte(out)) || !strings.Contains(errs, "changed since") {
		t.Errorf("-next -json of a changed file: stdout %q, stderr %q; want JSON and the note on stderr", out, errs)
	}
	other := filepath.Join(dir, "other.toml")
	store(other, loaded)
	if _, errs := next(); !strings.HasPrefix(errs, "config: the daemon runs "+other+", loaded at ") {
		t.Errorf("-next while the daemon runs another file says on stderr:\n%s", errs)
	}
}
