package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
)

// writableConfig has a schedule due every second, so that the beat and the
// pool write every second.
const writableConfig = `
[tasks.ok]
command = ["true"]
[[schedule]]
name = "tick"
cron = "@every 1s"
task = "ok"
`

// inProcessDaemon is a daemon run by Run in the test's process.
type inProcessDaemon struct {
	logs    syncBuffer
	signals chan os.Signal
	exited  chan error
}

// runDaemon runs the daemon with args in the test's process, and stops it
// when the test ends if it still runs.
func runDaemon(t *testing.T, args ...string) *inProcessDaemon {
	t.Helper()
	d := &inProcessDaemon{signals: make(chan os.Signal, 2), exited: make(chan error, 1)}
	go func() { d.exited <- Run(context.Background(), args, &d.logs, &d.logs, d.signals, Options{}) }()
	t.Cleanup(func() {
		d.signals <- syscall.SIGTERM
		select {
		case <-d.exited:
		case <-time.After(deadline):
			t.Errorf("the daemon did not return after SIGTERM\n%s", d.logs.String())
		}
	})
	return d
}

// startOrExit waits until d logs that it started (nil) or returns (Run's
// error, never nil then).
func (d *inProcessDaemon) startOrExit(t *testing.T) error {
	t.Helper()
	var err error
	eventually(t, "the daemon to start or exit", func() bool {
		select {
		case err = <-d.exited:
			d.exited <- err // for the cleanup
			if err == nil {
				t.Fatalf("Run returned nil before it was stopped\n%s", d.logs.String())
			}
			return true
		default:
			return strings.Contains(d.logs.String(), "scheduler started")
		}
	})
	return err
}

// migrated creates the schema of db, as a daemon's first start does.
func migrated(t *testing.T, db string) {
	t.Helper()
	q, err := engine.Open(context.Background(), db, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
}

// immutable makes the files at paths unwritable, even through descriptors
// already open (chattr +i), and returns the function that undoes it; it
// skips the test where that cannot be done (not root, or a file system
// without the attribute).
func immutable(t *testing.T, paths ...string) (undo func()) {
	t.Helper()
	undo = func() {
		for _, p := range paths {
			exec.Command("chattr", "-i", p).Run()
		}
	}
	for _, p := range paths {
		if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
			undo()
			t.Skipf("cannot make %s immutable (chattr +i: %v: %s)", p, err, out)
		}
	}
	t.Cleanup(undo)
	return undo
}

// TestDaemonRefusesAnUnwritableDatabase: a database that opens and reads
// but takes no write fails the daemon's start, naming it and why, before
// "scheduler started": a SQLite file that is immutable (as root) or
// read-only by its mode (as another user, whom the mode binds), which
// fails the write before READY; and a PostgreSQL session whose
// transactions are read-only, which fails the open already (it writes the
// schema's migrations table).
func TestDaemonRefusesAnUnwritableDatabase(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir := setup(t, writableConfig)
		db := filepath.Join(dir, "scheduler.db")
		migrated(t, db)
		if os.Geteuid() == 0 {
			immutable(t, db)
		} else if err := os.Chmod(db, 0o400); err != nil {
			t.Fatal(err)
		}
		testDaemonRefuses(t, dir, db, "is not writable", "readonly database")
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dsn := pgtest.DSN(t)
		migrated(t, dsn)
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("default_transaction_read_only", "on")
		u.RawQuery = q.Encode()
		testDaemonRefuses(t, setup(t, writableConfig), u.String(), "read-only transaction")
	})
}

func testDaemonRefuses(t *testing.T, dir, db string, says ...string) {
	d := runDaemon(t, "-config", filepath.Join(dir, "schedules.toml"), "-db", db)
	err := d.startOrExit(t)
	if err == nil {
		t.Fatalf("the daemon started on an unwritable database\n%s", d.logs.String())
	}
	for _, want := range append(says, strings.SplitN(filepath.Base(db), "?", 2)[0]) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run = %v, want it to name the database and say %q", err, want)
		}
	}
	if strings.Contains(d.logs.String(), "scheduler started") {
		t.Errorf("the daemon logged that it started:\n%s", d.logs.String())
	}
}

// TestHealthzFailsWhileWritesFail: a daemon whose database stops taking
// writes while it runs answers /healthz with 503 saying so, and
// scheduler_database_writable is 0, from the first write that fails until
// one commits again; then 200 and 1. On SQLite the file and its -wal are
// made immutable under the daemon (as root); on PostgreSQL the daemon's
// role is made to open read-only transactions, and its sessions are
// ended, so that the ones it opens again are read-only.
func TestHealthzFailsWhileWritesFail(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		if os.Geteuid() != 0 {
			t.Skip("needs root to make a file immutable under the daemon: a mode change does not reach its open descriptors")
		}
		dir := setup(t, writableConfig)
		db := filepath.Join(dir, "scheduler.db")
		var undo func()
		testHealthzFailsWhileWritesFail(t, dir, db,
			func() { undo = immutable(t, db, db+"-wal") },
			func() { undo() })
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		admin, err := pgx.Connect(ctx, os.Getenv(pgtest.Env))
		if err != nil {
			t.Skipf("%s: %v", pgtest.Env, err)
		}
		var b [6]byte
		rand.Read(b[:])
		role := "scheduler_test_" + hex.EncodeToString(b[:])
		exec := func(sql string) {
			t.Helper()
			if _, err := admin.Exec(ctx, sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		exec("CREATE ROLE " + role + " LOGIN")
		// Cleaned up after the schema, which holds the role's tables.
		t.Cleanup(func() {
			admin.Exec(ctx, "DROP ROLE "+role)
			admin.Close(ctx)
		})
		dsn := pgtest.DSN(t)
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		exec("GRANT USAGE, CREATE ON SCHEMA " + u.Query().Get("search_path") + " TO " + role)
		u.User = url.User(role)
		endSessions := func() {
			exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" + role + "'")
		}
		testHealthzFailsWhileWritesFail(t, setup(t, writableConfig), u.String(),
			func() {
				exec("ALTER ROLE " + role + " SET default_transaction_read_only = on")
				endSessions()
			},
			func() {
				exec("ALTER ROLE " + role + " RESET default_transaction_read_only")
				endSessions()
			})
	})
}

func testHealthzFailsWhileWritesFail(t *testing.T, dir, db string, breakWrites, mendWrites func()) {
	d := runDaemon(t, "-config", filepath.Join(dir, "schedules.toml"), "-db", db, "-http", "127.0.0.1:0")
	if err := d.startOrExit(t); err != nil {
		t.Fatalf("the daemon did not start: %v\n%s", err, d.logs.String())
	}
	m := listenRE.FindStringSubmatch(d.logs.String())
	if m == nil {
		t.Fatalf("no listen address in the log:\n%s", d.logs.String())
	}
	base := "http://" + m[1]
	// healthy waits until /healthz answers code with a body holding body,
	// and scheduler_database_writable is writable.
	healthy := func(what string, code int, body string, writable float64) {
		t.Helper()
		eventually(t, what, func() bool {
			b, c := get(t, base+"/healthz")
			if c != code || !strings.Contains(b, body) {
				return false
			}
			v, ok := samples(t, scrape(t, base+"/metrics"))["scheduler_database_writable"]
			return ok && v == writable
		})
	}
	healthy("/healthz 200 while the database takes writes", http.StatusOK, "ok", 1)
	breakWrites()
	healthy("/healthz 503 once writes fail", http.StatusServiceUnavailable, "database not writable: the last write failed", 0)
	mendWrites()
	healthy("/healthz 200 once a write commits again", http.StatusOK, "ok", 1)
}
