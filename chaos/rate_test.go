package chaos

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRateLimitAcrossDaemons: two daemons on one file share a task's rate
// limit per key, 2 starts a second for each customer, over a backlog of 20
// jobs per customer: no second of either customer's starts (as the jobs'
// claims record them, on the machine's one clock) holds more than 2, and
// both daemons take part.
func TestRateLimitAcrossDaemons(t *testing.T) {
	t.Parallel()
	s := newSite(t, `
[scheduler]
workers = 4

[tasks.sync]
command = ["{{REC}}", "-file", "{{RECORD}}"]
rate = "2/1s"
rate_key = "{{.customer}}"

[[schedule]]
name = "sync"
cron = "0 0 1 1 *"
task = "sync"
payload = { customer = "acme" }
`)
	a := s.start()
	b := s.start()
	const perCustomer = 20
	for i := range perCustomer {
		for _, c := range []string{"acme", "globex"} {
			s.mustCLI("-trigger", "sync", "-key", fmt.Sprintf("%s-%d", c, i), "-payload", `{"customer":"`+c+`"}`)
		}
	}
	db := openDB(t, s.db, false)
	eventually(t, "every job done", func() bool {
		return countRows(t, db, `SELECT count(*) FROM jobs WHERE type = 'sync' AND state = 'done'`) == 2*perCustomer
	})
	rows, err := db.Query(`SELECT payload, started_at, owner, attempt FROM jobs WHERE type = 'sync'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	starts := map[string][]int64{}
	workers := map[string]bool{}
	for rows.Next() {
		var payload, owner string
		var at int64
		var attempt int
		if err := rows.Scan(&payload, &at, &owner, &attempt); err != nil {
			t.Fatal(err)
		}
		var p struct{ Customer string }
		if err := json.Unmarshal([]byte(payload), &p); err != nil {
			t.Fatal(err)
		}
		if attempt != 1 {
			t.Errorf("a job of %s ran %d attempts, want 1", p.Customer, attempt)
		}
		starts[p.Customer] = append(starts[p.Customer], at)
		workers[owner[:strings.LastIndex(owner, "/w")]] = true // the daemon's pool
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for c, at := range starts {
		slices.Sort(at)
		for i := 2; i < len(at); i++ {
			if d := at[i] - at[i-2]; d < 1000 {
				t.Errorf("%s: starts %d to %d are 3 within %dms", c, i-1, i+1, d)
			}
		}
		span := time.Duration(at[len(at)-1]-at[0]) * time.Millisecond
		t.Logf("%s: %d starts over %v, %.0f%% of 2 a second", c, len(at), span,
			100*float64(time.Duration(len(at)-1)*500*time.Millisecond)/float64(span))
	}
	if len(workers) != 2 {
		t.Errorf("jobs ran on %d daemons, want both", len(workers))
	}
	a.stop()
	b.stop()
}
