package schedule

import (
	"context"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

const renotifyWatched = `
[tasks.t]
max_attempts = 1
[tasks.page]
[[schedule]]
name = "s"
cron = "0 * * * *"
task = "t"
notify = ["page"]
renotify = "10m"
`

// notices returns the notices sent, oldest first, as "notice count".
func notices(t *testing.T, q *queue.Client) []string {
	t.Helper()
	var out []string
	for _, n := range notifications(t, q) {
		out = append(out, n.Notice+" "+string(rune('0'+n.Count)))
	}
	return out
}

// TestIncidentRenotify: a schedule failing every hour opens one incident,
// which notifies once and counts the next failures; renotify repeats the
// notice every 10 minutes, the beat waking for it, until an operator
// acknowledges it; the next success resolves it, notifying once.
func TestIncidentRenotify(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		ctx := context.Background()
		r := startBeat(t, q, mustParse(t, renotifyWatched), clk)
		r.advance(time.Hour)
		runNext(t, q, clk, "t", queue.OutcomeDead)
		idle := r.advance(time.Second)
		if got, want := notices(t, q), []string{"first 1"}; !equal(got, want) {
			t.Fatalf("notices after the first failure = %v, want %v", got, want)
		}
		if want := clk.Now().Add(10 * time.Minute); !idle.next.Equal(want) {
			t.Errorf("the beat waits for %v, want the reminder at %v", idle.next, want)
		}
		r.advance(10 * time.Minute)
		r.advance(10 * time.Minute)
		if got, want := notices(t, q), []string{"first 1", "reminder 1", "reminder 1"}; !equal(got, want) {
			t.Fatalf("notices after 20 minutes = %v, want %v", got, want)
		}
		r.advance(40*time.Minute - time.Second) // the next instant
		runNext(t, q, clk, "t", queue.OutcomeDead)
		r.advance(time.Second)
		ins, err := q.Incidents(ctx, "s", 10)
		if err != nil || len(ins) != 1 || ins[0].Count != 2 || !ins[0].Open {
			t.Fatalf("Incidents = %+v, %v; want one open of 2 occurrences", ins, err)
		}
		if _, _, err := q.Acknowledge(ctx, ins[0].ID, "ann"); err != nil {
			t.Fatal(err)
		}
		for range 4 {
			r.advance(10 * time.Minute)
		}
		// One reminder was due at 14:00, none after the acknowledgement.
		if got, want := notices(t, q), []string{"first 1", "reminder 1", "reminder 1", "reminder 1"}; !equal(got, want) {
			t.Fatalf("notices after the acknowledgement = %v, want %v", got, want)
		}
		// Every notice ends; the next run succeeds: one resolution.
		for range 4 {
			runNext(t, q, clk, "page", queue.OutcomeDone)
		}
		r.advance(20 * time.Minute)
		runNext(t, q, clk, "t", queue.OutcomeDone)
		r.advance(time.Second)
		r.advance(time.Second)
		if got := notices(t, q); len(got) != 5 || got[4] != "resolved 2" {
			t.Errorf("notices after the success = %v, want one resolution of 2 occurrences", got)
		}
	})
}

// TestIncidentSilence: a silenced schedule's incident is opened and
// counted, and notifies nobody.
func TestIncidentSilence(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		ctx := context.Background()
		if err := q.Silence(ctx, "s", t0.Add(24*time.Hour), "ann"); err != nil {
			t.Fatal(err)
		}
		r := startBeat(t, q, mustParse(t, renotifyWatched), clk)
		r.advance(time.Hour)
		runNext(t, q, clk, "t", queue.OutcomeDead)
		r.advance(time.Second)
		r.advance(time.Hour)
		if got := notices(t, q); len(got) != 0 {
			t.Errorf("notices of a silenced schedule = %v, want none", got)
		}
		if ins, err := q.Incidents(ctx, "s", 10); err != nil || len(ins) != 1 || !ins[0].Open {
			t.Errorf("Incidents = %+v, %v; want one open", ins, err)
		}
	})
}
