package chaos

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// panicked reports whether output shows a Go panic or fatal runtime error.
func panicked(output string) bool {
	return strings.Contains(output, "panic:") || strings.Contains(output, "fatal error:") || strings.Contains(output, "goroutine ")
}

// fileState is a database file's content hash and which sidecar files exist.
type fileState struct {
	sum        [32]byte
	size       int64
	wal, shm   bool
	mainExists bool
}

func stateOf(t testing.TB, path string) fileState {
	t.Helper()
	var st fileState
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return st
	}
	data, err := os.ReadFile(path)
	if err == nil {
		st.mainExists = true
		st.sum = sha256.Sum256(data)
		st.size = int64(len(data))
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	_, err = os.Stat(path + "-wal")
	st.wal = err == nil
	_, err = os.Stat(path + "-shm")
	st.shm = err == nil
	return st
}

// makeGoodDB runs a daemon on s until it has run a few ticks, stops it and
// returns the state of the database it leaves.
func makeGoodDB(t *testing.T, s *site) fileState {
	t.Helper()
	d := s.start()
	waitRecord(t, s.record, "three ticks", func(evs []event) bool { return countKind(evs, "end", "tick|") >= 3 })
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	st := stateOf(t, s.db)
	if !st.mainExists || st.wal || st.shm {
		t.Fatalf("after a clean stop: database %+v, want the main file alone", st)
	}
	return st
}

// TestHostileConfigs runs a corpus of broken schedules.toml files (syntax
// errors, unknown keys, wrong types, bad cron, bad zones, impossible dates,
// bad policies and templates, binary garbage, a newline-and-table injection
// in a string, a huge file) against the binary. Invariants, for each file:
// -check exits 2 and names the problem (and its line where the decoder
// knows it); the daemon refuses to start with exit 2, the same message, and
// without touching a database (a good one stays byte-for-byte the same, a
// missing one is not created); nothing panics. A daemon told to reload each
// of them by SIGHUP logs the same problems, keeps its running config and
// keeps running its schedule.
func TestHostileConfigs(t *testing.T) {
	t.Parallel()
	corpus := hostileConfigs(size.badSchedules)
	s := newSite(t, goodBase)
	good := makeGoodDB(t, s)
	r := strings.NewReplacer("{{REC}}", recorder, "{{RECORD}}", s.record)
	bad := s.path("hostile.toml")
	missing := s.path("never-created.db")

	for _, hc := range corpus {
		data := []byte(r.Replace(string(hc.data)))
		if err := os.WriteFile(bad, data, 0o644); err != nil {
			t.Fatal(err)
		}
		check := run(t, t.Context(), s.dir, nil, "-check", "-config", "hostile.toml")
		if check.code != 2 {
			t.Errorf("%s: -check exit %d, want 2\n%s", hc.name, check.code, clip(check.stderr))
		}
		for _, w := range hc.want {
			if !strings.Contains(check.stderr, w) {
				t.Errorf("%s: -check output does not name %q:\n%s", hc.name, w, clip(check.stderr))
			}
		}
		for _, db := range []string{s.db, missing} {
			// A daemon that accepted the file would run forever.
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			res := run(t, ctx, s.dir, nil, "-config", "hostile.toml", "-db", db)
			cancel()
			if res.code != 2 {
				t.Errorf("%s: daemon with -db %s: exit %d, want 2\n%s", hc.name, filepath.Base(db), res.code, clip(res.stderr))
			}
			for _, w := range hc.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("%s: daemon output does not name %q:\n%s", hc.name, w, clip(res.stderr))
				}
			}
			if panicked(res.stderr) || panicked(check.stderr) {
				t.Errorf("%s: panic:\n%s%s", hc.name, clip(check.stderr), clip(res.stderr))
			}
		}
		if st := stateOf(t, s.db); st != good {
			t.Fatalf("%s: the good database changed: %+v, was %+v", hc.name, st, good)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("%s: the daemon created a database for a bad config", hc.name)
		}
	}

	// Reload: the daemon keeps its config through every bad file.
	d := s.start()
	for i, hc := range corpus {
		seen := len(d.entries("reload rejected: config error"))
		s.writeConfig(string(hc.data))
		d.signal(syscall.SIGHUP)
		d.waitMsg("reload rejected: keeping the running config", i+1)
		var logged strings.Builder
		for _, e := range d.entries("reload rejected: config error")[seen:] {
			if s, ok := e["err"].(string); ok {
				logged.WriteString(s + "\n")
			}
		}
		for _, w := range hc.want {
			if strings.HasPrefix(w, "more than ") {
				continue // -check's summary line; the log has one line per problem
			}
			if rest, ok := strings.CutPrefix(w, "hostile.toml:"); ok {
				w = "schedules.toml:" + rest
			}
			if !strings.Contains(logged.String(), w) {
				t.Errorf("%s: reload log does not name %q:\n%s", hc.name, w, clip(logged.String()))
			}
		}
	}
	if d.count("config reloaded") != 0 {
		t.Errorf("a bad file was applied")
	}
	before := countKind(readRecord(t, s.record), "end", "tick|")
	waitRecord(t, s.record, "ticks after the bad reloads", func(evs []event) bool { return countKind(evs, "end", "tick|") >= before+2 })
	s.writeConfig(goodBase)
	d.signal(syscall.SIGHUP)
	d.waitMsg("config reloaded", 1)
	if err := d.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	if panicked(d.log()) {
		t.Errorf("the daemon panicked during the reloads")
	}
	t.Logf("%d hostile configs rejected by -check, by the daemon (touching no database) and by SIGHUP reload (keeping the running config)", len(corpus))
}

// clip shortens output for a failure message.
func clip(s string) string {
	if len(s) > 2000 {
		return s[:1000] + "\n…\n" + s[len(s)-1000:]
	}
	return s
}

// TestAbsurdWorkerCountRejected checks that [scheduler] workers has an
// upper bound: -check accepts workers = 1000000000 today, and the daemon
// then dies of "fatal error: out of memory" allocating the pool's channels,
// after it opened (and created) the database.
func TestAbsurdWorkerCountRejected(t *testing.T) {
	t.Parallel()
	s := newSite(t, strings.Replace(goodBase, "workers = 2", "workers = 1000000000", 1))
	res := s.cli("-check")
	if res.code != 2 || !strings.Contains(res.stderr, "workers") {
		t.Errorf("-check of workers = 1000000000: %v; want exit 2 naming workers", res)
	}
}
