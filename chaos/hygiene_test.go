package chaos

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

const hygieneConfig = `
[scheduler]
workers = 2
retain_done = "24h"
maintenance_every = "2s"

[tasks.rec]
command = ["{{REC}}", "-file", "{{RECORD}}"]

[[schedule]]
name = "tick"
cron = "@every 1s"
task = "rec"

[[schedule]]
name = "probe"
cron = "0 0 1 1 *"
task = "rec"
`

// fixtureSQL inserts ?1 done jobs of schedule tick, one a second from ?2
// (Unix ms), with the dedup keys the beat would have given them and one
// done attempt each; then ten dead jobs as old, which purge must keep; then
// old skip records.
var fixtureSQL = []string{
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 - 1)
INSERT INTO jobs (key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item,
	scheduled_at, created_at, started_at, finished_at)
SELECT 'tick||' || strftime('%Y-%m-%dT%H:%M:%SZ', (?2 + i * 1000) / 1000, 'unixepoch'), 'rec', '{}', 'done', 1, 5, 0,
	?2 + i * 1000, 'tick', '', ?2 + i * 1000, ?2 + i * 1000, ?2 + i * 1000, ?2 + i * 1000 + 500
FROM n`,
	`INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome)
SELECT id, 1, 'fixture', started_at, finished_at, 'done' FROM jobs WHERE scheduled_at < ?2 + ?1 * 1000`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9)
INSERT INTO jobs (key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item,
	created_at, started_at, finished_at, last_error)
SELECT 'old-dead-' || i, 'rec', '{}', 'dead', 5, 5, 0, ?2, NULL, '', ?2, ?2, ?2 + i, 'fixture' FROM n`,
	`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 / 10 - 1)
INSERT INTO skips (schedule, item, scheduled_at, reason, recorded_at)
SELECT 'tick', 'old', ?2 + i * 1000, 'misfire', ?2 + i * 1000 FROM n`,
}

// TestStorageHygiene checks purge at scale: size.doneRows old done jobs
// (with their attempts, and old skip records) in the schema the daemon
// created, and a reader holding a transaction open while the daemon purges
// them. Invariants: purge proceeds in batches (progress is visible from
// outside while it runs); concurrent -trigger writers are never stalled
// beyond a second; dead jobs and recent done jobs are kept; the WAL, grown
// while the reader pinned it, shrinks again after the reader leaves; purged
// instants are never materialised again, also after a restart; the file
// passes integrity_check.
func TestStorageHygiene(t *testing.T) {
	t.Parallel()
	s := newSite(t, hygieneConfig)
	d := s.start()
	waitRecord(t, s.record, "a tick", func(evs []event) bool { return countKind(evs, "end", "tick|") >= 1 })
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	db := openDB(t, s.db, true)
	cursor0 := loadCursors(t, db)["tick"].At
	base := cursor0.Add(-60 * 24 * time.Hour).UnixMilli()
	fixtureStart := time.Now()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range fixtureSQL {
		if _, err := tx.Exec(q, size.doneRows, base); err != nil {
			t.Fatalf("fixture: %v", err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	old := func() int {
		return countRows(t, db, `SELECT count(*) FROM jobs WHERE state = 'done' AND finished_at < ?`, cursor0.Add(-24*time.Hour).UnixMilli())
	}
	recent := countRows(t, db, `SELECT count(*) FROM jobs WHERE state = 'done' AND finished_at >= ?`, cursor0.Add(-24*time.Hour).UnixMilli())
	if n := old(); n != size.doneRows {
		t.Fatalf("fixture: %d old done jobs, want %d", n, size.doneRows)
	}
	t.Logf("fixture: %d old done jobs with attempts, %d old skips, in %v", size.doneRows, size.doneRows/10, time.Since(fixtureStart).Round(time.Millisecond))

	// The reader: one connection holding a read transaction that has
	// read, so its snapshot pins the WAL.
	reader, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.ExecContext(context.Background(), "BEGIN"); err != nil {
		t.Fatal(err)
	}
	var pinned int
	if err := reader.QueryRowContext(context.Background(), "SELECT count(*) FROM jobs").Scan(&pinned); err != nil {
		t.Fatal(err)
	}
	readerOpen := true
	release := func() {
		if readerOpen {
			reader.ExecContext(context.Background(), "ROLLBACK")
			reader.Close()
			readerOpen = false
		}
	}
	defer release()

	// Writers: -trigger processes one after another, each timed.
	var mu sync.Mutex
	var latencies []time.Duration
	var slow []string // when the slow writes began, for the failure message
	var failures []result
	stopWriters := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stopWriters:
				return
			default:
			}
			began := time.Now()
			r := s.cli("-trigger", "probe")
			mu.Lock()
			latencies = append(latencies, r.took)
			if r.took > time.Second {
				slow = append(slow, fmt.Sprintf("%v from %s", r.took.Round(time.Millisecond), began.Format("15:04:05.000")))
			}
			if r.code != 0 {
				failures = append(failures, r)
			}
			mu.Unlock()
		}
	})

	d = s.start()
	d1 := d
	purgeStart := time.Now()
	walPeak := int64(0)
	var progress []int
	eventuallyWithin(t, 2*deadline, "old done jobs purged", func() bool {
		if fi, err := os.Stat(s.db + "-wal"); err == nil {
			walPeak = max(walPeak, fi.Size())
		}
		n := old()
		if len(progress) == 0 || progress[len(progress)-1] != n {
			progress = append(progress, n)
		}
		return n == 0
	})
	purgeTook := time.Since(purgeStart)
	intermediate := 0
	for _, n := range progress {
		if n > 0 && n < size.doneRows {
			intermediate++
		}
	}
	if intermediate == 0 {
		t.Errorf("purge progress seen from outside %v: no intermediate count, so no batches", progress)
	}

	// The reader leaves; the next maintenance shrinks the WAL.
	release()
	var walAfter int64
	eventually(t, "the WAL to shrink after the reader left", func() bool {
		fi, err := os.Stat(s.db + "-wal")
		if err != nil {
			walAfter = 0
			return true
		}
		walAfter = fi.Size()
		return walAfter < walPeak/4 && walAfter < 4<<20
	})
	close(stopWriters)
	wg.Wait()

	// Purged instants stay purged: more ticks, then a restart.
	n := countKind(readRecord(t, s.record), "end", "tick|")
	waitRecord(t, s.record, "ticks after the purge", func(evs []event) bool { return countKind(evs, "end", "tick|") >= n+3 })
	if err := d.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	d = s.start()
	waitRecord(t, s.record, "ticks after a restart", func(evs []event) bool { return countKind(evs, "end", "tick|") >= n+5 })
	if err := d.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM jobs WHERE schedule = 'tick' AND scheduled_at <= ?`, cursor0.UnixMilli()); n > recent {
		t.Errorf("%d jobs of tick at or before the cursor before the purge, want at most the %d recent ones: purged instants re-created", n, recent)
	}
	if c := loadCursors(t, db)["tick"].At; c.Before(cursor0) {
		t.Errorf("tick cursor moved back from %s to %s", cursor0, c)
	}
	if n := countRows(t, db, `SELECT count(*) FROM jobs WHERE state = 'dead' AND key LIKE 'old-dead-%'`); n != 10 {
		t.Errorf("%d of 10 old dead jobs left, want all: purge is for done jobs", n)
	}
	if n := countRows(t, db, `SELECT count(*) FROM jobs WHERE state = 'done' AND finished_at >= ?`, cursor0.Add(-24*time.Hour).UnixMilli()); n < recent {
		t.Errorf("%d recent done jobs, was %d: purge took jobs within retain_done", n, recent)
	}
	if n := countRows(t, db, `SELECT count(*) FROM attempts WHERE worker = 'fixture'`); n != 0 {
		t.Errorf("%d attempts of purged jobs left", n)
	}
	if n := countRows(t, db, `SELECT count(*) FROM skips WHERE item = 'old'`); n != 0 {
		t.Errorf("%d old skip records left", n)
	}
	checkIntegrity(t, db)

	mu.Lock()
	defer mu.Unlock()
	for _, r := range failures {
		t.Errorf("-trigger during the purge failed: %v", r)
	}
	slices.Sort(latencies)
	worst := latencies[len(latencies)-1]
	// A purge in one transaction holds a trigger for about its whole
	// length; a purge in batches lets it through between two. Relative to
	// the purge, with a floor for a slow process start on a loaded machine,
	// so that this is no claim about speed.
	if worst > purgeTook/2 && worst > 30*time.Second {
		t.Errorf("-trigger writes waited up to %v during a purge of %v: %v", worst, purgeTook, slow)
		for _, e := range append(d1.entries("maintenance done"), d1.entries("maintenance failed")...) {
			t.Logf("daemon: %v", e)
		}
	}
	t.Logf("purge of %d done jobs (+%d skips) with a reader holding a snapshot: %v, progress seen %d times; "+
		"%d concurrent -trigger writes, latency median %v, max %v; WAL peak %.1f MB, %.1f MB after the reader left",
		size.doneRows, size.doneRows/10, purgeTook.Round(time.Millisecond), len(progress), len(latencies),
		latencies[len(latencies)/2].Round(time.Millisecond), worst.Round(time.Millisecond),
		float64(walPeak)/(1<<20), float64(walAfter)/(1<<20))
}
