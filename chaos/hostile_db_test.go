package chaos

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileDatabases points the daemon and the CLI at database files that
// are not SQLite, truncated, from a newer schema, a directory, or SQLite
// garbage. Invariants: each process exits 1 with an error naming the file
// and the problem, never a panic, and leaves the file byte-for-byte as it
// was.
func TestHostileDatabases(t *testing.T) {
	t.Parallel()
	s := newSite(t, goodBase)
	makeGoodDB(t, s)
	good, err := os.ReadFile(s.db)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	garbage := make([]byte, len(good))
	for i := range garbage {
		garbage[i] = byte(r.UintN(256))
	}
	copy(garbage, "SQLite format 3\x00")

	cases := []struct {
		name string
		make func(path string) error
		want string
	}{
		{"not-sqlite", func(p string) error {
			return os.WriteFile(p, bytes.Repeat([]byte("this is not a database\n"), 200), 0o644)
		}, "not a database"},
		{"truncated-half", func(p string) error { return os.WriteFile(p, good[:len(good)/2], 0o644) }, "malformed"},
		{"truncated-in-header", func(p string) error { return os.WriteFile(p, good[:60], 0o644) }, "malformed"},
		{"sqlite-header-then-garbage", func(p string) error { return os.WriteFile(p, garbage, 0o644) }, "not a database"},
		{"schema-from-the-future", func(p string) error {
			if err := os.WriteFile(p, good, 0o644); err != nil {
				return err
			}
			db := openDB(t, p, true)
			if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
				return err
			}
			return db.Close()
		}, "newer"},
		{"a-directory", func(p string) error { return os.Mkdir(p, 0o755) }, "unable to open database file"},
	}
	for _, c := range cases {
		path := s.path(c.name + ".db")
		if err := c.make(path); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		before := stateOf(t, path)
		for _, args := range [][]string{{}, {"-trigger", "tick"}, {"-status"}, {"-job", "1"}} {
			all := append([]string{"-config", s.config, "-db", path}, args...)
			res := run(t, t.Context(), s.dir, nil, all...)
			what := fmt.Sprintf("%s: scheduler %s", c.name, strings.Join(append([]string{"-db", c.name + ".db"}, args...), " "))
			if res.code != 1 {
				t.Errorf("%s: exit %d, want 1\n%s", what, res.code, clip(res.stderr))
			}
			if !strings.Contains(res.stderr, c.want) || !strings.Contains(res.stderr, c.name+".db") {
				t.Errorf("%s: error does not name the file and %q:\n%s", what, c.want, clip(res.stderr))
			}
			if panicked(res.stderr) {
				t.Errorf("%s: panic:\n%s", what, clip(res.stderr))
			}
		}
		if after := stateOf(t, path); after.sum != before.sum || after.size != before.size {
			t.Errorf("%s: the file changed", c.name)
		}
	}
	t.Logf("%d hostile database files refused by the daemon, -trigger, -status and -job, unchanged", len(cases))
}

// TestReadOnlyDatabase makes a good database unwritable two ways: the file
// immutable (chattr +i, since root ignores permissions) and its directory a
// read-only bind mount, with and without the -wal and -shm files a crash
// leaves. Invariants: -trigger exits 1 naming the problem and acknowledges
// nothing; the daemon refuses to start (exit 1), naming the file and
// saying that it is not writable or cannot be opened; nothing panics; the
// file is left as it was, and once writable again a daemon runs on it
// normally.
func TestReadOnlyDatabase(t *testing.T) {
	t.Parallel()
	s := newSite(t, goodBase)
	good := makeGoodDB(t, s)
	goodBytes, err := os.ReadFile(s.db)
	if err != nil {
		t.Fatal(err)
	}
	// sidecars leaves the -wal and -shm files of a daemon that was killed.
	sidecars := func(db string) {
		d := s.spawnOn(db)
		d.waitMsg("scheduler started", 1)
		d.kill()
		if st := stateOf(t, db); !st.wal || !st.shm {
			t.Fatalf("a killed daemon left no -wal and -shm files: %+v", st)
		}
	}
	checkUnwritable := func(db string) {
		res := run(t, t.Context(), s.dir, nil, "-config", s.config, "-db", db, "-trigger", "tick")
		if res.code != 1 || strings.Contains(res.stdout, "enqueued") || panicked(res.stderr) ||
			!(strings.Contains(res.stderr, "readonly database") || strings.Contains(res.stderr, "unable to open database file")) {
			t.Errorf("-trigger on an unwritable database: %v; want exit 1 saying it is read-only or cannot be opened", res)
		}
		d := s.spawnOn(db)
		d.waitFor("the daemon to refuse to start", d.exited)
		if log := d.log(); d.exitCode() != 1 || !strings.Contains(log, db) || strings.Contains(log, "scheduler started") ||
			!(strings.Contains(log, "is not writable") && strings.Contains(log, "readonly database") || strings.Contains(log, "unable to open database file")) {
			t.Errorf("daemon on an unwritable database: exit %d, want 1 naming the file, saying it is not writable or cannot be opened:\n%s", d.exitCode(), d.tail(10))
		}
		if panicked(d.log()) {
			t.Errorf("panic:\n%s", d.tail(30))
		}
	}

	// The cases share the parent test: its site's daemons report to it.
	var skipped []string
	runCase := func(name string, fn func() string) {
		if why := fn(); why != "" {
			skipped = append(skipped, name+": "+why)
		}
	}
	for _, crashed := range []bool{false, true} {
		name := "clean"
		if crashed {
			name = "after-a-crash"
		}
		runCase("immutable-file-"+name, func() string {
			db := s.path("immutable-" + name + ".db")
			if err := os.WriteFile(db, goodBytes, 0o644); err != nil {
				t.Fatal(err)
			}
			if crashed {
				sidecars(db)
			}
			before := stateOf(t, db)
			if out, err := exec.Command("chattr", "+i", db).CombinedOutput(); err != nil {
				return fmt.Sprintf("chattr +i is not available here (%v: %s); root ignores file permissions, so there is no other way to make the file read-only", err, out)
			}
			defer exec.Command("chattr", "-i", db).Run()
			checkUnwritable(db)
			if st := stateOf(t, db); st.sum != before.sum {
				t.Errorf("the immutable file changed")
			}
			return ""
		})
		runCase("read-only-mount-"+name, func() string {
			dir := s.path("rw-" + name)
			ro := s.path("ro-" + name)
			for _, d := range []string{dir, ro} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "scheduler.db"), goodBytes, 0o644); err != nil {
				t.Fatal(err)
			}
			if crashed {
				sidecars(filepath.Join(dir, "scheduler.db"))
			}
			before := stateOf(t, filepath.Join(dir, "scheduler.db"))
			if out, err := exec.Command("mount", "--bind", dir, ro).CombinedOutput(); err != nil {
				return fmt.Sprintf("cannot bind-mount (%v: %s)", err, out)
			}
			defer exec.Command("umount", ro).Run()
			if out, err := exec.Command("mount", "-o", "remount,bind,ro", ro).CombinedOutput(); err != nil {
				return fmt.Sprintf("cannot make the bind mount read-only (%v: %s)", err, out)
			}
			checkUnwritable(filepath.Join(ro, "scheduler.db"))
			if st := stateOf(t, filepath.Join(dir, "scheduler.db")); st != before {
				t.Errorf("the database under the read-only mount changed: %+v, was %+v", st, before)
			}
			return ""
		})
	}

	if len(skipped) == 4 {
		t.Skipf("no way to make a file read-only here: %v", skipped)
	}
	for _, why := range skipped {
		t.Logf("case skipped: %s", why)
	}
	if st := stateOf(t, s.db); st != good {
		t.Errorf("the original database changed: %+v, was %+v", st, good)
	}
	db := s.path("immutable-after-a-crash.db")
	d := s.spawnOn(db)
	d.waitMsg("scheduler started", 1)
	n := countKind(readRecord(t, s.record), "end", "tick|")
	waitRecord(t, s.record, "ticks on the database once writable", func(evs []event) bool { return countKind(evs, "end", "tick|") >= n+2 })
	if err := d.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	checkIntegrity(t, openDB(t, db, false))
}

// TestUnwritableDatabaseBacksOff checks that a daemon whose every write
// fails backs off between attempts instead of retrying (and logging) many
// times a second. The case: the database file and its -wal file are made
// immutable (chattr +i) under the running daemon, so that every write
// fails, through the descriptors it holds too. (A database unwritable
// from the start fails the start: see TestReadOnlyDatabase.)
func TestUnwritableDatabaseBacksOff(t *testing.T) {
	t.Parallel()
	s := newSite(t, goodBase)
	d := s.start()
	files := []string{s.db, s.db + "-wal"}
	mended := false
	mend := func() {
		if !mended {
			mended = true
			for _, f := range files {
				exec.Command("chattr", "-i", f).Run()
			}
		}
	}
	defer mend()
	for _, f := range files {
		if out, err := exec.Command("chattr", "+i", f).CombinedOutput(); err != nil {
			t.Skipf("cannot make %s immutable (%v: %s)", f, err, out)
		}
	}
	d.waitMsg("pool write failed", 1)
	start := time.Now()
	first := d.count("pool write failed")
	time.Sleep(3 * time.Second) // the observation window
	n := d.count("pool write failed") - first
	mend()
	d.stop()
	if n > 15 {
		t.Errorf("%d failed pool writes logged in %v; a back-off from 100ms to 5s allows about 7", n, time.Since(start).Round(time.Millisecond))
	}
}

// TestFullDisk runs the daemon with its database on a 2 MB tmpfs, fills
// the disk while it runs and triggers jobs. Invariants: a trigger that
// cannot be written fails with exit 1 saying the disk is full, and is not
// acknowledged; the daemon logs the problem, does not panic and keeps
// running; once space is freed, triggers and scheduled runs work again; the
// database passes integrity_check and keeps every acknowledged job.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	s := newSite(t, goodBase)
	mnt := s.path("small")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	s.db = filepath.Join(mnt, "scheduler.db")

	d := s.start()
	waitRecord(t, s.record, "ticks", func(evs []event) bool { return countKind(evs, "end", "tick|") >= 2 })
	acked := []string{}
	_, key := s.trigger("tick")
	acked = append(acked, key)

	filler := filepath.Join(mnt, "filler")
	fill(t, filler)
	big := `{"blob":"` + strings.Repeat("x", 100_000) + `"}`
	failed := 0
	for range 5 {
		res := s.cli("-trigger", "tick", "-payload", big)
		switch {
		case res.code == 0:
			// A page freed by the daemon's own work may still fit it.
			for _, m := range enqueuedLine.FindAllStringSubmatch(res.stdout, -1) {
				acked = append(acked, m[2])
			}
		case res.code == 1 && strings.Contains(res.stderr, "disk is full") && !strings.Contains(res.stdout, "enqueued"):
			failed++
		default:
			t.Errorf("-trigger on a full disk: %v; want success or exit 1 saying the disk is full", res)
		}
		if panicked(res.stderr) {
			t.Errorf("panic:\n%s", res.stderr)
		}
	}
	if failed == 0 {
		t.Errorf("no trigger met the full disk: the test filled nothing")
	}
	d.waitFor("the daemon to log the full disk", func() bool {
		for _, l := range d.lines {
			if strings.Contains(l, "disk is full") {
				return true
			}
		}
		return false
	})
	if d.exited() {
		t.Errorf("the daemon exited on a full disk: %v", d.err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	_, key = s.trigger("tick")
	acked = append(acked, key)
	eventually(t, "the acknowledged triggers to run", func() bool {
		rec := byKey(readRecord(t, s.record))
		for _, k := range acked {
			if rec[k] == nil || len(rec[k].ends[1]) == 0 {
				return false
			}
		}
		return true
	})
	n := countKind(readRecord(t, s.record), "end", "tick||2")
	waitRecord(t, s.record, "scheduled ticks after the disk was freed", func(evs []event) bool {
		return countKind(evs, "end", "tick||2") >= n+2
	})
	if err := d.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if panicked(d.log()) {
		t.Errorf("the daemon panicked")
	}
	db := openDB(t, s.db, false)
	checkIntegrity(t, db)
	for _, k := range acked {
		if countRows(t, db, `SELECT count(*) FROM jobs WHERE key = ? AND state = 'done'`, k) != 1 {
			t.Errorf("acknowledged job %s is not done", k)
		}
	}
	t.Logf("full disk: %d of 5 triggers refused with \"disk is full\", the daemon kept running, %d acknowledged jobs done after space was freed",
		failed, len(acked))
}

// fill writes to path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}
