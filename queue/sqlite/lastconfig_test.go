package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"scheduler/clock"

	"scheduler/queue/store"
)

// TestSaveConfigLastConfig: the last saved config comes back byte for byte
// with its path, digest and load time, also through a read-only queue; a
// later save replaces it.
func TestSaveConfigLastConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, clk := newTestQueue(t)
	if _, err := q.LastConfig(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LastConfig of a new queue: %v, want ErrNotFound", err)
	}
	first := []byte("[tasks.a]\ncommand = [\"true\"]\n")
	if _, err := q.SaveConfig(ctx, "/etc/scheduler/schedules.toml", first); err != nil {
		t.Fatal(err)
	}
	clk.Advance(90 * time.Second)
	second := []byte("# \x00 not even text\n")
	saved, err := q.SaveConfig(ctx, "/etc/scheduler/other.toml", second)
	if err != nil {
		t.Fatal(err)
	}
	want := StoredConfig{Path: "/etc/scheduler/other.toml", Data: second, SHA256: store.ConfigSHA256(second), LoadedAt: t0.Add(90 * time.Second)}
	ro, err := Open(ctx, q.Name(), Config{Clock: clk, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for name, qq := range map[string]*Store{"writer": q, "read-only": ro} {
		got, err := qq.LastConfig(ctx)
		if err != nil {
			t.Fatalf("%s: LastConfig: %v", name, err)
		}
		if got.Path != want.Path || string(got.Data) != string(want.Data) || got.SHA256 != want.SHA256 || !got.LoadedAt.Equal(want.LoadedAt) {
			t.Errorf("%s: LastConfig = %+v, want %+v", name, got, want)
		}
	}
	if saved.SHA256 != want.SHA256 || len(saved.SHA256) != 64 {
		t.Errorf("SaveConfig returned digest %q, want %q", saved.SHA256, want.SHA256)
	}
	var rows int
	if err := q.r.QueryRowContext(ctx, `SELECT count(*) FROM running_config`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("running_config holds %d rows (%v), want 1", rows, err)
	}
}

// TestLastConfigOfAnOlderSchema: a file an older program migrated, opened
// read-only, has no stored config: ErrNotFound, not an SQL error.
func TestLastConfigOfAnOlderSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	clk := clock.NewFake(t0)
	q, err := Open(ctx, path, Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.w.ExecContext(ctx, "DROP TABLE running_config; PRAGMA user_version = 1"); err != nil {
		t.Fatal(err)
	}
	q.Close()
	ro, err := Open(ctx, path, Config{Clock: clk, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.LastConfig(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("LastConfig: %v, want ErrNotFound", err)
	}
}
