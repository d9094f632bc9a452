package cli

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestStatusShowsRateLimits: a task whose rate limit, one start an hour,
// holds back its second job shows in -status with its pending job and the
// instant its limit allows the next start; a task with a limit per key
// shows without it.
func TestStatusShowsRateLimits(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "a.log"]
rate = "1/1h"
[tasks.keyed]
command = ["./record.sh", "b.log"]
rate = "1/1h"
rate_key = "{{.customer}}"
[[schedule]]
name = "a"
cron = "0 0 1 1 *"
task = "rec"
[[schedule]]
name = "b"
cron = "0 0 1 1 *"
task = "keyed"
payload = { customer = "acme" }
`)
	startDaemon(t, dir, nil)
	mustCLI(t, dir, "-trigger", "a")
	mustCLI(t, dir, "-trigger", "a")
	mustCLI(t, dir, "-trigger", "b")
	mustCLI(t, dir, "-trigger", "b")
	waitRecords(t, filepath.Join(dir, "a.log"), 1)
	waitRecords(t, filepath.Join(dir, "b.log"), 1)
	var st struct {
		RateLimited []struct {
			Type      string  `json:"type"`
			Rate      string  `json:"rate"`
			Key       string  `json:"key"`
			Pending   int     `json:"pending"`
			NextStart *string `json:"next_start"`
		} `json:"rate_limited"`
	}
	eventually(t, "-status lists both tasks' held jobs", func() bool {
		if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &st); err != nil {
			t.Fatal(err)
		}
		return len(st.RateLimited) == 2 && st.RateLimited[1].NextStart != nil
	})
	keyed, rec := st.RateLimited[0], st.RateLimited[1]
	if keyed.Type != "keyed" || keyed.Rate != "1/1h" || keyed.Key != "{{.customer}}" || keyed.Pending != 1 || keyed.NextStart != nil {
		t.Errorf("keyed: %+v, want 1/1h per {{.customer}}, 1 pending, no next start", keyed)
	}
	if rec.Type != "rec" || rec.Rate != "1/1h" || rec.Key != "" || rec.Pending != 1 {
		t.Errorf("rec: %+v, want 1/1h, 1 pending", rec)
	}
	if next, err := time.Parse(time.RFC3339, *rec.NextStart); err != nil || time.Until(next) < 50*time.Minute {
		t.Errorf("rec's next start %s (%v), want about an hour after its first", *rec.NextStart, err)
	}
	text := mustCLI(t, dir, "-status")
	for _, want := range []string{
		`(?m)^keyed: rate limit 1/1h per \{\{\.customer\}\}, 1 job pending, the oldest ready for \S+$`,
		`(?m)^rec: rate limit 1/1h, 1 job pending, the oldest ready for \S+; the next start is allowed at \S+$`,
	} {
		if !regexp.MustCompile(want).MatchString(text) {
			t.Errorf("-status text lacks %s:\n%s", want, text)
		}
	}
}
