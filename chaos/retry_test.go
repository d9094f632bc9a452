package chaos

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestRetryThenDead checks the retry policy end to end: a command that
// always fails, with max_attempts 4 and backoff 1s, runs exactly 4 times,
// the gaps between attempts follow the doubling backoff (each within its
// jitter window, so they grow), the job ends dead with every attempt in its
// history; a restart does not run it again; -retry revives it and, the
// cause fixed, it completes.
func TestRetryThenDead(t *testing.T) {
	t.Parallel()
	s := newSite(t, `
[scheduler]
workers = 2
maintenance_every = "1s"

[tasks.fail]
command = ["{{REC}}", "-file", "{{RECORD}}", "-exit", "3", "-exit-unless", "{{DIR}}/fixed"]
max_attempts = 4
backoff = "1s"
max_backoff = "1m"

[tasks.tick]
command = ["{{REC}}", "-file", "{{DIR}}/ticks.log"]

[[schedule]]
name = "fail"
cron = "0 0 1 1 *"
task = "fail"

[[schedule]]
name = "tick"
cron = "@every 1s"
task = "tick"
`)
	d := s.start()
	id, key := s.trigger("fail")
	eventually(t, "job dead", func() bool { return s.job(id).State == "dead" })

	v := s.job(id)
	if v.Attempt != 4 || len(v.Attempts) != 4 {
		t.Errorf("dead at attempt %d with %d attempts in its history, want 4 and 4", v.Attempt, len(v.Attempts))
	}
	for i, at := range v.Attempts {
		want := "retry"
		if i == len(v.Attempts)-1 {
			want = "dead"
		}
		if at.Number != i+1 || at.Outcome != want || !strings.Contains(at.Error, "exit code 3") {
			t.Errorf("attempt %d: number %d, outcome %s, error %q; want %s after exit code 3", i+1, at.Number, at.Outcome, at.Error, want)
		}
	}
	r := byKey(readRecord(t, s.record))[key]
	if r == nil || r.executions() != 4 {
		t.Fatalf("the record shows %d executions, want exactly 4", r.executions())
	}
	// Gap n is from the end of attempt n to the start of attempt n+1:
	// backoff 1s doubling, jittered within the upper half of each delay.
	var gaps []time.Duration
	for n := 1; n < 4; n++ {
		if len(r.ends[n]) != 1 || len(r.starts[n+1]) != 1 {
			t.Fatalf("record lacks the end of attempt %d or the start of %d", n, n+1)
		}
		gap := r.starts[n+1][0].start.Sub(r.ends[n][0].end)
		gaps = append(gaps, gap)
		nominal := time.Second << (n - 1)
		if lo, hi := nominal/2-50*time.Millisecond, nominal+1500*time.Millisecond; gap < lo || gap > hi {
			t.Errorf("gap after attempt %d: %v, want within [%v, %v] (backoff %v with jitter)", n, gap, lo, hi, nominal)
		}
	}
	if !(gaps[2] > gaps[0]) {
		t.Errorf("gaps %v do not grow", gaps)
	}

	// A restart must not run the dead job again: three ticks of the new
	// daemon and two maintenance passes (reclaim) must come and go.
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	restarted := time.Now()
	d = s.start()
	waitRecord(t, s.path("ticks.log"), "three ticks after the restart", func(evs []event) bool {
		n := 0
		for _, e := range evs {
			if e.kind == "end" && e.start.After(restarted) {
				n++
			}
		}
		return n >= 3
	})
	d.waitMsg("maintenance done", 2)
	if n := byKey(readRecord(t, s.record))[key].executions(); n != 4 {
		t.Errorf("after a restart the dead job ran again: %d executions", n)
	}
	if v := s.job(id); v.State != "dead" || v.Attempt != 4 {
		t.Errorf("after a restart: %s at attempt %d, want dead at 4", v.State, v.Attempt)
	}

	// -retry revives it; fixed, it completes.
	if err := os.WriteFile(s.path("fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := s.mustCLI("-retry", id); !strings.Contains(out, "made pending") {
		t.Errorf("-retry %s printed %q", id, out)
	}
	eventually(t, "revived job done", func() bool { return s.job(id).State == "done" })
	r = byKey(readRecord(t, s.record))[key]
	if r.executions() != 5 || !r.succeeded(5) {
		t.Errorf("after -retry: %d executions, attempt 5 succeeded: %v; want 5 and true", r.executions(), r.succeeded(5))
	}
	if err := d.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	t.Logf("retry: 4 attempts with gaps %v, dead, not rerun after a restart, revived by -retry and done", gaps)
}
