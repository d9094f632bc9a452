package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestReloadRecordsTheConfigInTheRows: the daemon's pools' rows record the
// SHA-256 of the file it runs and when it loaded it; a reload of a changed
// file rewrites both at once, one of the same file keeps them.
func TestReloadRecordsTheConfigInTheRows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config, db := filepath.Join(dir, "schedules.toml"), filepath.Join(dir, "s.db")
	write := func(s string) []byte {
		t.Helper()
		if err := os.WriteFile(config, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return []byte(s)
	}
	first := write("[tasks.t]\ncommand = [\"true\"]\n[pools.p]\nworkers = 1\ntasks = [\"t\"]\n")
	logs := &lineWriter{lines: make(chan string, 1000)}
	signals := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(t.Context(), []string{"-config", config, "-db", db, "-log-format", "json"}, io.Discard, logs, signals, Options{})
	}()
	waitLine := func(msg string) {
		t.Helper()
		timeout := time.After(2 * time.Minute) // failure deadline, not a sync point
		for {
			select {
			case l := <-logs.lines:
				var e map[string]any
				if json.Unmarshal([]byte(l), &e) == nil && e["msg"] == msg {
					return
				}
			case err := <-done:
				t.Fatalf("daemon returned %v before logging %q", err, msg)
			case <-timeout:
				t.Fatalf("timed out waiting for %q", msg)
			}
		}
	}
	defer func() {
		signals <- syscall.SIGTERM
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	}()
	waitLine("scheduler started")
	q, err := engine.Open(context.Background(), db, engine.Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	// rows returns the config of each of the daemon's two rows (the
	// default pool's and p's) when they agree, "" otherwise.
	rows := func() (string, time.Time) {
		t.Helper()
		ds, err := q.Pools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 2 || ds[0].Config != ds[1].Config || !ds[0].ConfigAt.Equal(ds[1].ConfigAt) {
			return "", time.Time{}
		}
		return ds[0].Config, ds[0].ConfigAt
	}
	sha, at := rows()
	if sha != store.ConfigSHA256(first) || at.IsZero() {
		t.Fatalf("rows at start: config %q loaded at %v, want %s", sha, at, store.ConfigSHA256(first))
	}

	signals <- syscall.SIGHUP // the same file
	waitLine("config reloaded")
	if sha2, at2 := rows(); sha2 != sha || !at2.Equal(at) {
		t.Errorf("rows after reloading the same file: config %q loaded at %v, want %q at %v", sha2, at2, sha, at)
	}

	second := write(string(first) + "[tasks.u]\ncommand = [\"true\"]\n")
	signals <- syscall.SIGHUP
	waitLine("config reloaded")
	eventually(t, "the rows rewritten", func() bool {
		sha2, at2 := rows()
		return sha2 == store.ConfigSHA256(second) && !at2.Before(at)
	})
}
