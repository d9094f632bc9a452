package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedWords are what SQLite lock contention looks like in a message.
var lockedWords = []string{"database is locked", "SQLITE_BUSY", "database table is locked"}

func mentionsLocked(s string) bool {
	for _, w := range lockedWords {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// concurrentTriggers is how many -trigger processes TestConcurrentTriggers
// starts at once, at every scale.
const concurrentTriggers = 200

// TestConcurrentTriggers checks that 200 -trigger processes
// started at once against a daemon busy with a fanned-out @every 1s
// schedule all succeed, that neither they nor the daemon ever report a
// locked database, and that the record shows exactly one run per trigger.
func TestConcurrentTriggers(t *testing.T) {
	t.Parallel()
	var items []string
	for i := range 20 {
		items = append(items, fmt.Sprintf("{ shard = %d }", i))
	}
	s := newSite(t, `
[scheduler]
workers = 8

[tasks.rec]
command = ["{{REC}}", "-file", "{{RECORD}}", "-sleep-max", "{{.sleep}}"]

[[schedule]]
name = "busy"
cron = "@every 1s"
task = "rec"
payload = { sleep = "100ms" }
for_each = [ `+strings.Join(items, ", ")+` ]

[[schedule]]
name = "burst"
cron = "0 0 1 1 *"
task = "rec"
payload = { sleep = "20ms" }
`)
	d := s.start()
	waitRecord(t, s.record, "the busy schedule running", func(evs []event) bool { return countKind(evs, "end", "busy|") >= 40 })

	n := concurrentTriggers
	results := make([]result, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-gate
			results[i] = s.cliContext(context.Background(), "-trigger", "burst", "-key", fmt.Sprintf("k%d", i))
		})
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	all := time.Since(start)

	var lat []time.Duration
	keys := map[string]bool{}
	for i, r := range results {
		lat = append(lat, r.took)
		if r.code != 0 {
			t.Errorf("trigger %d: %v", i, r)
			continue
		}
		m := enqueuedLine.FindAllStringSubmatch(r.stdout, -1)
		if len(m) != 1 {
			t.Errorf("trigger %d printed %q, want one enqueued job", i, r.stdout)
			continue
		}
		keys[m[0][2]] = true
		if mentionsLocked(r.stderr) {
			t.Errorf("trigger %d reported a locked database: %s", i, r.stderr)
		}
	}
	evs := waitRecord(t, s.record, fmt.Sprintf("%d burst runs", n), func(evs []event) bool {
		return countKind(evs, "end", "burst|") >= len(keys)
	})
	for key, r := range byKey(evs) {
		if !strings.HasPrefix(key, "burst|") {
			continue
		}
		if !keys[key] {
			t.Errorf("run of %s, which no trigger acknowledged", key)
		}
		if r.executions() != 1 {
			t.Errorf("%s ran %d times, want once", key, r.executions())
		}
	}
	if got := len(byKeyPrefix(evs, "burst|")); got != n {
		t.Errorf("%d distinct triggered runs, want exactly %d", got, n)
	}
	if err := d.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if mentionsLocked(d.log()) {
		t.Errorf("the daemon logged a locked database")
	}
	slices.Sort(lat)
	t.Logf("%d concurrent -trigger processes against a busy daemon: all in %v; latency median %v, max %v",
		n, all.Round(time.Millisecond), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
}

// byKeyPrefix returns the runs of keys with prefix.
func byKeyPrefix(evs []event, prefix string) map[string]*runs {
	out := map[string]*runs{}
	for k, r := range byKey(evs) {
		if strings.HasPrefix(k, prefix) {
			out[k] = r
		}
	}
	return out
}

// TestConcurrentFirstUse starts a daemon and four -trigger processes at the
// same moment on a database that does not exist yet, a hundred times.
// Invariants: every daemon starts, waiting for the triggers within the busy
// timeout as they do once the file exists; a trigger that finds the file
// succeeds, one that comes before the daemon made it says so (only the
// daemon creates its database) and creates nothing.
func TestConcurrentFirstUse(t *testing.T) {
	t.Parallel()
	s := newSite(t, goodBase+`
[[schedule]]
name = "manual"
cron = "0 0 1 1 *"
task = "rec"
`)
	failed, early := 0, 0
	for round := range 100 {
		db := s.path(fmt.Sprintf("fresh-%d.db", round))
		gate := make(chan struct{})
		results := make([]result, 4)
		var wg sync.WaitGroup
		for i := range results {
			wg.Go(func() {
				<-gate
				results[i] = run(t, t.Context(), s.dir, nil, "-config", s.config, "-db", db, "-trigger", "manual")
			})
		}
		d := s.spawnOn(db)
		close(gate)
		wg.Wait()
		d.waitFor("the daemon to start or exit", func() bool { return d.msgs["scheduler started"] > 0 || d.exited() })
		if d.exited() {
			failed++
			t.Errorf("round %d: the daemon failed to start: %s", round, d.tail(3))
		} else {
			d.stop()
		}
		for _, r := range results {
			switch {
			case r.code == 1 && strings.Contains(r.stderr, "does not exist yet: start the daemon first"):
				early++
			case r.code != 0:
				failed++
				t.Errorf("round %d: %v", round, r)
			}
		}
	}
	t.Logf("%d of 500 processes (400 triggers, 100 daemons) failed on a database being created; %d triggers came before the daemon made it", failed, early)
}
