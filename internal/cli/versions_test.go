package cli

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestVersionMismatchWaitsForAWorker: a producer that moved to version 2
// of a task enqueues a job that the daemon, whose worker accepts version 1
// alone, does not run: it runs a job of version 1 enqueued after it (by a
// producer still on version 1), leaves the other pending at attempt 0,
// and -status and -job say so; once reloaded to accept both versions, it
// runs it.
func TestVersionMismatchWaitsForAWorker(t *testing.T) {
	t.Parallel()
	const task = `
[tasks.rec]
command = ["./record.sh", "a.log"]
%s
[[schedule]]
name = "a"
cron = "0 0 1 1 *"
task = "rec"
`
	dir := setup(t, strings.Replace(task, "%s", "version = 2\naccepts = [1]", 1))
	writeFile(t, filepath.Join(dir, "old.toml"), strings.Replace(task, "%s", "", 1))
	d := startDaemon(t, dir, nil)
	enqueued := regexp.MustCompile(`enqueued job (\d+)`)
	newer := enqueued.FindStringSubmatch(mustCLI(t, dir, "-trigger", "a"))[1]
	older := enqueued.FindStringSubmatch(mustCLI(t, dir, "-config", "old.toml", "-trigger", "a"))[1]
	job := func(id string) jobView {
		t.Helper()
		var j jobView
		if err := json.Unmarshal([]byte(mustCLI(t, dir, "-job", id, "-json")), &j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	rs := waitRecords(t, filepath.Join(dir, "a.log"), 1)
	if old := job(older); rs[0].key != old.Key || old.Version != 1 {
		t.Fatalf("the daemon ran %s first, want %s, the job of version 1 (version %d)\n%s", rs[0].key, old.Key, old.Version, d.log())
	}
	if j := job(newer); j.State != "pending" || j.Attempt != 0 || j.Version != 2 {
		t.Errorf("the job of version 2: %s at attempt %d, version %d; want pending at attempt 0, version 2", j.State, j.Attempt, j.Version)
	}
	if text := mustCLI(t, dir, "-job", newer); !regexp.MustCompile(`(?m)^version\s+2$`).MatchString(text) {
		t.Errorf("-job text lacks the version:\n%s", text)
	}
	var st struct {
		WaitingForHandler []json.RawMessage `json:"waiting_for_handler"`
		WaitingForVersion []struct {
			Type     string `json:"type"`
			Version  int    `json:"version"`
			Accepted []int  `json:"accepted"`
			Ready    int    `json:"ready"`
		} `json:"waiting_for_version"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.WaitingForHandler) != 0 || len(st.WaitingForVersion) != 1 {
		t.Fatalf("-status: waiting for a handler %s, for a version %+v; want rec's version 2 alone", st.WaitingForHandler, st.WaitingForVersion)
	}
	if w := st.WaitingForVersion[0]; w.Type != "rec" || w.Version != 2 || !slices.Equal(w.Accepted, []int{1}) || w.Ready != 1 {
		t.Errorf("-status waiting for a version: %+v, want rec's 1 job of version 2, pools accepting 1", w)
	}
	want := regexp.MustCompile(`(?m)^rec: 1 job of version 2 waits for a worker that accepts it \(running pools accept 1\), the oldest for \S+$`)
	if text := mustCLI(t, dir, "-status"); !want.MatchString(text) {
		t.Errorf("-status text lacks the job waiting for its version:\n%s", text)
	}

	writeFile(t, filepath.Join(dir, "schedules.toml"), strings.Replace(task, "%s", "version = 2\naccepts = [1, 2]", 1))
	d.signal(syscall.SIGHUP)
	rs = waitRecords(t, filepath.Join(dir, "a.log"), 2)
	if j := job(newer); rs[1].key != j.Key || rs[1].attempt != "1" {
		t.Errorf("second run: %+v, want the job of version 2 (%s) at attempt 1", rs[1], j.Key)
	}
	eventually(t, "nothing waiting", func() bool {
		json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &st)
		return len(st.WaitingForVersion) == 0
	})
}
