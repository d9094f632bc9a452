package chaos

import (
	"encoding/json"
	"regexp"
	"syscall"
	"testing"
)

// jobView is the JSON of `scheduler -job ID -json`.
type jobView struct {
	ID          int64  `json:"id"`
	Key         string `json:"key"`
	State       string `json:"state"`
	Attempt     int    `json:"attempt"`
	MaxAttempts int    `json:"max_attempts"`
	Owner       string `json:"owner"`
	Attempts    []struct {
		Number  int    `json:"number"`
		Worker  string `json:"worker"`
		Outcome string `json:"outcome"`
		Error   string `json:"error"`
		Output  string `json:"output"`
	} `json:"attempts"`
}

// job shows a job through the CLI.
func (s *site) job(idOrKey string) jobView {
	s.t.Helper()
	var v jobView
	out := s.mustCLI("-job", idOrKey, "-json")
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		s.t.Fatalf("-job %s -json: %v\n%s", idOrKey, err, out)
	}
	return v
}

var enqueuedLine = regexp.MustCompile(`enqueued job (\d+) \(key (\S+)\)`)

// trigger runs -trigger and returns the first job's id and key.
func (s *site) trigger(args ...string) (id, key string) {
	s.t.Helper()
	out := s.mustCLI(append([]string{"-trigger"}, args...)...)
	m := enqueuedLine.FindStringSubmatch(out)
	if m == nil {
		s.t.Fatalf("-trigger %v printed %q", args, out)
	}
	return m[1], m[2]
}

// TestStalledDaemon checks lease fencing with two daemons on one database:
// daemon A claims a job and is SIGSTOPped past the job's lease; daemon B
// reclaims the job and runs it again; A, continued while B's attempt still
// runs, finishes its stale attempt. Invariants: A's completion is rejected
// (recorded as a stale attempt, the job stays B's and running), the job is
// done exactly once, by B's attempt, and the history tells the whole story.
// The record shows the command ran twice: that is the at-least-once window,
// a stalled worker whose lease expired, and it is why handlers must be
// idempotent.
func TestStalledDaemon(t *testing.T) {
	t.Parallel()
	s := newSite(t, `
[scheduler]
workers = 2
lease = "3s"
maintenance_every = "1s"
shutdown_grace = "1s"

[tasks.slow]
command = ["{{REC}}", "-file", "{{RECORD}}", "-sleep-by-attempt", "4500ms,8s"]
max_attempts = 5

[[schedule]]
name = "stall"
cron = "0 0 1 1 *"
task = "slow"
`)
	a := s.start()
	id, key := s.trigger("stall")
	waitRecord(t, s.record, "attempt 1 started", func(evs []event) bool { return countKind(evs, "start", key) == 1 })
	a.signal(syscall.SIGSTOP)

	b := s.start()
	waitRecord(t, s.record, "attempt 1 ended and attempt 2 started", func(evs []event) bool {
		r := byKey(evs)[key]
		return r != nil && len(r.ends[1]) == 1 && len(r.starts[2]) == 1
	})
	if v := s.job(id); v.State != "running" || v.Attempt != 2 {
		t.Fatalf("after reclaim: job %s attempt %d, want running attempt 2", v.State, v.Attempt)
	}
	a.signal(syscall.SIGCONT)
	a.waitMsg("stale result rejected", 1)
	if v := s.job(id); v.State != "running" || v.Attempt != 2 {
		t.Errorf("after the stale completion: job %s attempt %d, want still running attempt 2 (B's)", v.State, v.Attempt)
	}
	eventually(t, "job done", func() bool { return s.job(id).State == "done" })

	v := s.job(id)
	var outcomes []string
	for _, at := range v.Attempts {
		outcomes = append(outcomes, at.Outcome)
		if at.Outcome == "done" && at.Number != 2 {
			t.Errorf("attempt %d is done, want attempt 2 (B's)", at.Number)
		}
	}
	want := map[string]int{"lease_expired": 1, "stale": 1, "done": 1}
	got := map[string]int{}
	for _, o := range outcomes {
		got[o]++
	}
	if len(got) != len(want) || got["lease_expired"] != 1 || got["stale"] != 1 || got["done"] != 1 {
		t.Errorf("attempt outcomes %v, want one lease_expired, one stale (A's late completion), one done", outcomes)
	}
	if v.Attempt != 2 {
		t.Errorf("job ends at attempt %d, want 2", v.Attempt)
	}
	r := byKey(readRecord(t, s.record))[key]
	if r.executions() != 2 || !r.succeeded(1) || !r.succeeded(2) {
		t.Errorf("record: %d executions, want 2 complete ones (attempt 1 by the stalled daemon, 2 by the other)", r.executions())
	}
	for _, d := range []*daemon{a, b} {
		if err := d.stop(); err != nil {
			t.Errorf("%s: %v", d.name, err)
		}
	}
	t.Logf("stalled daemon: the command ran %d times for one job (the at-least-once window: a worker stalled past its lease); "+
		"attempt outcomes %v", r.executions(), outcomes)
}
