package chaos

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// faninStormConfig runs up every second with three items, one of whose
// command always fails (dead after two attempts), and down after it.
const faninStormConfig = `
[scheduler]
workers = 4
shutdown_grace = "2s"
maintenance_every = "1s"
lease = "2s"

[tasks.item]
command = ["{{REC}}", "-file", "{{RECORD}}", "-sleep-max", "300ms", "-exit", "{{.code}}"]
max_attempts = 2
backoff = "100ms"
max_backoff = "200ms"

[tasks.sum]
command = ["{{REC}}", "-file", "{{RECORD}}", "-sleep-max", "100ms"]
max_attempts = 8
backoff = "100ms"
max_backoff = "500ms"

[[schedule]]
name = "up"
cron = "* * * * * *"
task = "item"
for_each = [ { c = "a", code = "0" }, { c = "b", code = "1" }, { c = "c", code = "0" } ]

[[schedule]]
name = "down"
after = "up"
task = "sum"
`

// TestFanInKillStormSQLite: two daemons on one SQLite file, SIGKILLed at
// random moments while up fans out every second; see checkFanInStorm.
func TestFanInKillStormSQLite(t *testing.T) {
	t.Parallel()
	s := newSite(t, faninStormConfig)
	first := s.start()
	db := openDB(t, s.db, false)
	fanInStorm(t, s, db, func(col string) string { return col }, []*daemon{first, s.spawn()}, func(int) *daemon { return s.spawn() })
}

// TestFanInKillStormPostgres: the same with three nodes on PostgreSQL.
func TestFanInKillStormPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	s := newSite(t, faninStormConfig)
	s.db = dsn
	db := openPG(t, dsn)
	spawn := func(n int) *daemon { return spawnNode(t, s, n, 0) }
	first := spawn(0)
	first.waitMsg("scheduler started", 1)
	fanInStorm(t, s, db, ms, []*daemon{first, spawn(1), spawn(2)}, spawn)
}

// fanInStorm SIGKILLs one of nodes at random moments and starts it again,
// then pauses up, lets the nodes run everything to the end, and checks
// the fan-ins (checkFanInStorm). msOf is the SQL of a time column as Unix
// milliseconds.
func fanInStorm(t *testing.T, s *site, db *sql.DB, msOf func(string) string, nodes []*daemon, spawn func(n int) *daemon) {
	kills := max(size.kills/2, 4)
	for range kills {
		time.Sleep(300*time.Millisecond + time.Duration(rand.IntN(1500))*time.Millisecond) // a random kill instant
		n := rand.IntN(len(nodes))
		if nodes[n].exited() {
			t.Fatalf("%s exited by itself (%v):\n%s", nodes[n].name, nodes[n].err, nodes[n].tail(30))
		}
		nodes[n].kill()
		if strings.Contains(nodes[n].log(), "panic") {
			t.Errorf("%s logged a panic:\n%s", nodes[n].name, nodes[n].tail(30))
		}
		time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond) // random downtime
		nodes[n] = spawn(n)
	}
	s.mustCLI("-pause", "up")
	unsettled := func() int {
		return countRows(t, db, `SELECT count(*) FROM jobs WHERE state NOT IN ('done', 'dead')`) +
			countRows(t, db, `SELECT count(*) FROM fanins WHERE state <> 'fired'`)
	}
	for round := 0; ; round++ {
		eventually(t, "every job done or dead, every fan-in fired", func() bool { return unsettled() == 0 })
		for _, d := range nodes {
			if err := d.stop(); err != nil {
				t.Errorf("%s: %v", d.name, err)
			}
		}
		// A beat pass that began before the pause may have committed after
		// the check: then run again.
		if unsettled() == 0 || round == 3 {
			break
		}
		for n := range nodes {
			nodes[n] = spawn(n)
		}
	}
	waitRecordersGone(t, s.record)
	instants, dead := checkFanInStorm(t, db, msOf)
	t.Logf("fan-in kill storm (%s scale, %d nodes): %d SIGKILLs; %d upstream instants, each with one downstream job after its last item ended; %d items dead",
		size.name, len(nodes), kills, instants, dead)
}

// checkFanInStorm checks that every instant of up has exactly one job of
// down, standing for that instant and created at or after the last of the
// instant's jobs ended, and no job of down stands for another instant.
func checkFanInStorm(t *testing.T, db *sql.DB, msOf func(string) string) (instants, dead int) {
	t.Helper()
	lastEnd := map[int64]int64{}
	rows, err := db.Query(fmt.Sprintf(`SELECT %s, max(%s), count(*), sum(CASE WHEN state = 'dead' THEN 1 ELSE 0 END)
		FROM jobs WHERE schedule = 'up' AND scheduled_at IS NOT NULL GROUP BY scheduled_at`, msOf("scheduled_at"), msOf("finished_at")))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var at, end, n, d int64
		if err := rows.Scan(&at, &end, &n, &d); err != nil {
			t.Fatal(err)
		}
		if n != 3 {
			t.Errorf("instant %d of up has %d jobs, want 3", at, n)
		}
		lastEnd[at] = end
		dead += int(d)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if len(lastEnd) == 0 {
		t.Fatal("no instant of up ran")
	}
	seen := map[int64]int{}
	rows, err = db.Query(fmt.Sprintf(`SELECT %s, %s FROM jobs WHERE schedule = 'down'`, msOf("scheduled_at"), msOf("created_at")))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var at, created int64
		if err := rows.Scan(&at, &created); err != nil {
			t.Fatal(err)
		}
		seen[at]++
		end, ok := lastEnd[at]
		switch {
		case !ok:
			t.Errorf("a job of down stands for %d, no instant of up", at)
		case created < end:
			t.Errorf("the job of down for %d was created at %d, before the last item ended at %d", at, created, end)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for at := range lastEnd {
		if seen[at] != 1 {
			t.Errorf("instant %d of up has %d jobs of down, want 1", at, seen[at])
		}
	}
	return len(lastEnd), dead
}
