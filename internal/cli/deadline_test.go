package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
)

const deadlineConfig = `
[http]
listen = "127.0.0.1:0"

[tasks.ok]
command = ["true"]

[[schedule]]
name = "missed"
cron = "0 3 1 1 *"
task = "ok"
deadline = "1h"

[[schedule]]
name = "recovered"
cron = "0 3 1 1 *"
task = "ok"
deadline = "1h"

[[schedule]]
name = "ontime"
cron = "0 3 1 1 *"
task = "ok"
deadline = "1h"

[[schedule]]
name = "plain"
cron = "0 3 1 1 *"
task = "ok"
`

// TestDeadlineStateAgrees: -status, /metrics and the dashboard show the
// same deadline state of each schedule on one database: missed while a
// missed alarm is open, recovered when its last run recovered, on time
// when a run came since the last recovery, none without a deadline.
func TestDeadlineStateAgrees(t *testing.T) {
	t.Parallel()
	dir := setup(t, deadlineConfig)
	seedDeadlines(t, filepath.Join(dir, "scheduler.db"))
	want := map[string]string{"missed": "missed", "recovered": "recovered", "ontime": "on time", "plain": ""}

	d := startDaemon(t, dir, nil)
	m := listenRE.FindStringSubmatch(d.waitLog("http listening"))
	if m == nil {
		t.Fatalf("no listen address in the log:\n%s", d.log())
	}
	base := "http://" + m[1]
	var rep struct {
		Schedules []scheduleStatus `json:"schedules"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &rep); err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, s := range rep.Schedules {
		status[s.Name] = s.DeadlineState
	}
	metrics := samples(t, scrape(t, base+"/metrics"))
	page := scrape(t, base+"/")
	for name, w := range want {
		if status[name] != w {
			t.Errorf("-status: %s deadline_state %q, want %q", name, status[name], w)
		}
		var ones []string
		for _, st := range []string{"on time", "late", "missed", "recovered"} {
			if metrics[fmt.Sprintf(`scheduler_schedule_deadline_state{schedule=%q,state=%q}`, name, st)] == 1 {
				ones = append(ones, st)
			}
		}
		if (w == "" && len(ones) != 0) || (w != "" && (len(ones) != 1 || ones[0] != w)) {
			t.Errorf("/metrics: %s's deadline state series at 1: %q, want %q", name, ones, w)
		}
		cell := regexp.MustCompile(`(?s)<tr data-schedule="` + name + `".*?<td class="deadline"[^>]*><span class="badge [^"]*">([^<]*)</span>`).FindStringSubmatch(page)
		if dash := "-"; w != "" {
			dash = w
			if cell == nil || html.UnescapeString(cell[1]) != dash {
				t.Errorf("dashboard: %s's deadline badge %q, want %q", name, cell, dash)
			}
		} else if cell == nil || cell[1] != dash {
			t.Errorf("dashboard: %s's deadline badge %q, want %q", name, cell, dash)
		}
	}
}

// seedDeadlines writes the runs and alarms of deadlineConfig's schedules:
// every run done but missed's, left running with its miss open; a miss and recovery of
// recovered's only run, and of ontime's older run, with a newer run since.
func seedDeadlines(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	q, err := engine.Open(ctx, path, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	i0, i1 := time.Date(2025, 1, 1, 3, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	ids := map[string]int64{}
	for name, instants := range map[string][]time.Time{"missed": {i1}, "recovered": {i1}, "ontime": {i0, i1}, "plain": {i1}} {
		var jobs []queue.NewJob
		for _, at := range instants {
			jobs = append(jobs, queue.NewJob{Key: schedule.DedupKey(name, "", at), Type: "ok", Schedule: name, ScheduledAt: at, RunAt: at})
		}
		res, err := q.Advance(ctx, store.Advance{Schedule: name, To: i1, Jobs: jobs})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = res[0].ID
	}
	for range 5 {
		now := time.Now()
		r, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "seed", Now: now, Claim: &store.Claim{Lease: time.Hour, N: 1, Types: []string{"ok"}}})
		if err != nil || len(r.Claimed) != 1 {
			t.Fatalf("claim: %+v, %v", r, err)
		}
		if r.Claimed[0].ID == ids["missed"] {
			continue // left running: its miss stays open
		}
		res := store.Result{Job: r.Claimed[0], Worker: "seed/w1", Outcome: queue.OutcomeDone, Started: now, Finished: now}
		if _, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "seed", Now: now, Results: []store.Result{res}}); err != nil {
			t.Fatal(err)
		}
	}
	raise := func(a store.NewAlarm) int64 {
		t.Helper()
		got, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{a}})
		if err != nil || len(got) != 1 {
			t.Fatalf("raise %+v: %+v, %v", a, got, err)
		}
		return got[0].ID
	}
	raise(store.NewAlarm{Schedule: "missed", ScheduledAt: i1, Kind: store.AlarmMissed, JobID: ids["missed"]})
	for name, at := range map[string]time.Time{"recovered": i1, "ontime": i0} {
		miss := raise(store.NewAlarm{Schedule: name, ScheduledAt: at, Kind: store.AlarmMissed, JobID: ids[name]})
		raise(store.NewAlarm{Schedule: name, ScheduledAt: at, Kind: store.AlarmRecovered, JobID: ids[name], Resolves: []int64{miss}})
	}
}
