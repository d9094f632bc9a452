package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
)

// TestDiscard: -discard ends a dead job as discarded, recording who; it
// refuses a job in any other state, naming it and its state, and changes
// nothing; -discard all (of a schedule with -schedule) ends every dead one
// and says when there is none. Discarded jobs are not dead for -status and
// -dead, show as discarded in -jobs and -job (text and JSON), and -retry
// of one takes the discard back.
func TestDiscard(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "s.db")
	q, err := engine.Open(t.Context(), db, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	one := makeDeadJob(t, q, queue.NewJob{Type: "t", Key: "one", MaxAttempts: 1, Schedule: "s1"})
	makeDeadJob(t, q, queue.NewJob{Type: "t", Key: "two", MaxAttempts: 1, Schedule: "s1"})
	makeDeadJob(t, q, queue.NewJob{Type: "t", Key: "three", MaxAttempts: 1, Schedule: "s2"})
	pending, err := q.Enqueue(t.Context(), queue.NewJob{Type: "u", Key: "waiting"})
	if err != nil {
		t.Fatal(err)
	}
	q.Close()

	config := filepath.Join(t.TempDir(), "schedules.toml")
	if err := os.WriteFile(config, []byte("[tasks.t]\ncommand = [\"true\"]\n[tasks.u]\ncommand = [\"true\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// run returns what the command prints and the error it ends with.
	run := func(wantCode int, args ...string) string {
		t.Helper()
		var out, errs strings.Builder
		err := Run(t.Context(), append([]string{"-config", config, "-db", db}, args...), &out, &errs, nil, Options{})
		if code := ExitCode(err); code != wantCode {
			t.Fatalf("%v: exit %d, want %d\n%s%s%v", args, code, wantCode, out.String(), errs.String(), err)
		}
		text := out.String() + errs.String()
		if err != nil {
			text += err.Error()
		}
		return text
	}
	status := func() map[string]int {
		t.Helper()
		var st struct {
			Totals map[string]int `json:"totals"`
			Dead   int            `json:"dead"`
		}
		if err := json.Unmarshal([]byte(run(0, "-status", "-json")), &st); err != nil {
			t.Fatal(err)
		}
		st.Totals["dead (summary)"] = st.Dead
		return st.Totals
	}

	if out := run(1, "-discard", "waiting"); !strings.Contains(out, fmt.Sprintf("job %d (waiting) is pending, not dead: only a dead job can be discarded", pending.ID)) {
		t.Errorf("-discard of a pending job says:\n%s", out)
	}
	if out := run(2, "-discard", "one", "-schedule", "s1"); !strings.Contains(out, "-schedule goes with -discard all") {
		t.Errorf("-discard ID -schedule says:\n%s", out)
	}
	if st := status(); st["dead"] != 3 || st["dead (summary)"] != 3 || st["pending"] != 1 || st["discarded"] != 0 {
		t.Fatalf("-status before any discard: %v", st)
	}

	if out := run(0, "-discard", "one"); !strings.Contains(out, fmt.Sprintf("job %d (one) discarded", one)) {
		t.Errorf("-discard one says:\n%s", out)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	var v jobView
	if err := json.Unmarshal([]byte(run(0, "-job", "one", "-json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.State != "discarded" || !strings.HasPrefix(v.DiscardedBy, u.Username+"@") || !strings.Contains(v.DiscardedBy, "scheduler -discard") || v.DiscardedAt == "" || v.LastError != "failed" {
		t.Errorf("-job one -json: state %s, discarded by %q at %q, error %q", v.State, v.DiscardedBy, v.DiscardedAt, v.LastError)
	}
	if out := run(0, "-job", "one"); !strings.Contains(out, "discarded by") || !strings.Contains(out, "state         discarded") {
		t.Errorf("-job one says:\n%s", out)
	}
	if out := run(1, "-discard", "one"); !strings.Contains(out, "is discarded, not dead") {
		t.Errorf("second -discard one says:\n%s", out)
	}
	if out := run(0, "-dead"); strings.Contains(out, " one ") || !strings.Contains(out, "two") {
		t.Errorf("-dead lists:\n%s", out)
	}
	if out := run(0, "-jobs", "-state", "discarded"); !strings.Contains(out, "discarded") || !strings.Contains(out, "one") || strings.Contains(out, "two") {
		t.Errorf("-jobs -state discarded lists:\n%s", out)
	}

	if out := run(0, "-discard", "all", "-schedule", "s1"); !strings.Contains(out, "1 dead job of s1 discarded") {
		t.Errorf("-discard all -schedule s1 says:\n%s", out)
	}
	if out := run(0, "-discard", "all", "-schedule", "s1"); !strings.Contains(out, "no dead jobs of s1: nothing to discard") {
		t.Errorf("-discard all -schedule s1 again says:\n%s", out)
	}
	if out := run(0, "-discard", "all"); !strings.Contains(out, "1 dead job discarded") {
		t.Errorf("-discard all says:\n%s", out)
	}
	if out := run(0, "-discard", "all"); !strings.Contains(out, "no dead jobs: nothing to discard") {
		t.Errorf("-discard all of none says:\n%s", out)
	}
	if st := status(); st["dead"] != 0 || st["dead (summary)"] != 0 || st["discarded"] != 3 || st["pending"] != 1 {
		t.Errorf("-status after the discards: %v", st)
	}
	if out := run(0, "-status"); !strings.Contains(out, "dead 0, cancelled 0, discarded 3") {
		t.Errorf("-status says:\n%s", out)
	}

	if out := run(0, "-retry", "one"); !strings.Contains(out, "made pending: its discard by "+u.Username+"@") {
		t.Errorf("-retry of a discarded job says:\n%s", out)
	}
	if out := run(1, "-retry", "waiting"); !strings.Contains(out, "is pending, not dead: only a dead or discarded job can be retried") {
		t.Errorf("-retry of a pending job says:\n%s", out)
	}
	if out := run(0, "-retry", "all"); !strings.Contains(out, "0 dead jobs made pending") {
		t.Errorf("-retry all with only discarded jobs says:\n%s", out)
	}
}
