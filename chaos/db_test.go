package chaos

import (
	"database/sql"
	"net/url"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver the product uses
)

// openDB opens the SQLite file at path from the test process, read-only
// unless write is set. The test reads the daemon's database only through
// SQL, never as a file.
func openDB(t testing.TB, path string, write bool) *sql.DB {
	t.Helper()
	v := url.Values{}
	v.Add("_pragma", "busy_timeout(10000)")
	if !write {
		v.Add("_pragma", "query_only(1)")
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+v.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// jobRow is a row of the jobs table.
type jobRow struct {
	ID          int64
	Key         string
	Type        string
	State       string
	Attempt     int
	MaxAttempts int
	Schedule    string
	Item        string
	ScheduledAt int64 // Unix ms; 0 when NULL
	Payload     string
	RunAt       int64
}

func (j jobRow) manual() bool { return strings.Contains(j.Key, "|manual|") }

func loadJobs(t testing.TB, db *sql.DB) []jobRow {
	t.Helper()
	rows, err := db.Query(`SELECT id, key, type, state, attempt, max_attempts, coalesce(schedule, ''), item,
		coalesce(scheduled_at, 0), payload, run_at FROM jobs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []jobRow
	for rows.Next() {
		var j jobRow
		if err := rows.Scan(&j.ID, &j.Key, &j.Type, &j.State, &j.Attempt, &j.MaxAttempts, &j.Schedule, &j.Item,
			&j.ScheduledAt, &j.Payload, &j.RunAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// attemptRow is an attempt: a row of the attempts table or, for a done job
// whose successful attempt printed nothing, the job row, which records that
// attempt itself (its worker in owner).
type attemptRow struct {
	JobID   int64
	Attempt int
	Worker  string
	Outcome string
	Error   string
}

func loadAttempts(t testing.TB, db *sql.DB) map[int64][]attemptRow {
	t.Helper()
	rows, err := db.Query(`SELECT job_id, attempt, worker, outcome, error FROM (
		SELECT job_id, attempt, worker, outcome, error, 0 AS synthetic, id FROM attempts
		UNION ALL
		SELECT id, attempt, owner, 'done', '', 1, id FROM jobs j WHERE state = 'done' AND NOT EXISTS (
			SELECT 1 FROM attempts a WHERE a.job_id = j.id AND a.attempt = j.attempt AND a.outcome = 'done'))
	ORDER BY synthetic, id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64][]attemptRow{}
	for rows.Next() {
		var a attemptRow
		if err := rows.Scan(&a.JobID, &a.Attempt, &a.Worker, &a.Outcome, &a.Error); err != nil {
			t.Fatal(err)
		}
		out[a.JobID] = append(out[a.JobID], a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// skipRow is a row of the skips table.
type skipRow struct {
	Schedule    string
	Item        string
	ScheduledAt int64
	Reason      string
}

func loadSkips(t testing.TB, db *sql.DB) []skipRow {
	t.Helper()
	rows, err := db.Query(`SELECT schedule, item, scheduled_at, reason FROM skips ORDER BY schedule, scheduled_at, item`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []skipRow
	for rows.Next() {
		var s skipRow
		if err := rows.Scan(&s.Schedule, &s.Item, &s.ScheduledAt, &s.Reason); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// cursorRow is a row of the cursors table.
type cursorRow struct {
	At     time.Time
	Paused bool
}

func loadCursors(t testing.TB, db *sql.DB) map[string]cursorRow {
	t.Helper()
	rows, err := db.Query(`SELECT schedule, at, paused FROM cursors`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]cursorRow{}
	for rows.Next() {
		var name string
		var at int64
		var c cursorRow
		if err := rows.Scan(&name, &at, &c.Paused); err != nil {
			t.Fatal(err)
		}
		c.At = time.UnixMilli(at).UTC()
		out[name] = c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tryCursors is loadCursors for a database that may not exist yet: it
// returns nil on any error.
func tryCursors(path string) map[string]cursorRow {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)&mode=ro")
	if err != nil {
		return nil
	}
	defer db.Close()
	rows, err := db.Query(`SELECT schedule, at, paused FROM cursors`)
	if err != nil {
		return nil
	}
	defer rows.Close()
	out := map[string]cursorRow{}
	for rows.Next() {
		var name string
		var at int64
		var c cursorRow
		if rows.Scan(&name, &at, &c.Paused) != nil {
			return nil
		}
		c.At = time.UnixMilli(at).UTC()
		out[name] = c
	}
	return out
}

// stormRows are the rows a storm's checks read, whichever engine kept them.
type stormRows struct {
	jobs     []jobRow
	attempts map[int64][]attemptRow
	skips    []skipRow
	cursors  map[string]cursorRow
}

// loadSQLite reads the rows of a SQLite database.
func loadSQLite(t testing.TB, db *sql.DB) stormRows {
	t.Helper()
	return stormRows{jobs: loadJobs(t, db), attempts: loadAttempts(t, db), skips: loadSkips(t, db), cursors: loadCursors(t, db)}
}

// checkIntegrity fails the test unless PRAGMA integrity_check says ok and
// no foreign key is dangling.
func checkIntegrity(t testing.TB, db *sql.DB) {
	t.Helper()
	rows, err := db.Query("PRAGMA integrity_check")
	if err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	var res []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		res = append(res, s)
	}
	rows.Close()
	if len(res) != 1 || res[0] != "ok" {
		t.Errorf("PRAGMA integrity_check: %v", res)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM pragma_foreign_key_check").Scan(&n); err != nil {
		t.Fatalf("foreign_key_check: %v", err)
	}
	if n != 0 {
		t.Errorf("PRAGMA foreign_key_check: %d dangling references", n)
	}
}

// countRows runs a count query.
func countRows(t testing.TB, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// rfc3339 formats a Unix millisecond instant as the product's keys do.
func rfc3339(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}
