package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"

	"github.com/scheduler-run/scheduler/queue/store"
)

// TestLastConfigReadOnly: the config a writer saved comes back, byte for
// byte, through a read-only store on the file too; the table holds one
// row. (What SaveConfig and LastConfig return is the suite's
// SaveConfigLastConfig.)
func TestLastConfigReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, clk := newTestQueue(t)
	if _, err := q.SaveConfig(ctx, "/etc/scheduler/schedules.toml", []byte("[tasks.a]\n")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(90 * time.Second)
	data := []byte("# \x00 not even text\n")
	saved, err := q.SaveConfig(ctx, "/etc/scheduler/other.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := Open(ctx, q.Name(), Config{Clock: clk, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	got, err := ro.LastConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := StoredConfig{Path: "/etc/scheduler/other.toml", Data: data, SHA256: store.ConfigSHA256(data), LoadedAt: t0.Add(90 * time.Second)}
	if got.Path != want.Path || string(got.Data) != string(want.Data) || got.SHA256 != want.SHA256 || !got.LoadedAt.Equal(want.LoadedAt) || saved.SHA256 != want.SHA256 {
		t.Errorf("read-only LastConfig = %+v, want %+v", got, want)
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
