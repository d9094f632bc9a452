package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

const saveConfigSQL = `INSERT INTO running_config (id, path, data, sha256, loaded_at) VALUES (1, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET path = excluded.path, data = excluded.data, sha256 = excluded.sha256, loaded_at = excluded.loaded_at`

// SaveConfig stores data, read from the file at path, as the configuration
// the daemon now runs, replacing the one stored before. The write is
// fsynced: after a power loss an operator command must not fall back to a
// configuration older than the one the daemon ran.
func (s *Store) SaveConfig(ctx context.Context, path string, data []byte) (*store.StoredConfig, error) {
	c := &store.StoredConfig{Path: path, Data: data, SHA256: store.ConfigSHA256(data), LoadedAt: s.clock.Now().Truncate(time.Millisecond).UTC()}
	if data == nil {
		c.Data = []byte{} // NOT NULL: an empty file is still a file
	}
	err := s.inTx(ctx, true, func(tx txn) error {
		_, err := tx.exec(ctx, saveConfigSQL, c.Path, c.Data, c.SHA256, ms(c.LoadedAt))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("save config %s: %w", path, err)
	}
	return c, nil
}

// hasRunningConfigSQL tells whether the table exists: a file last migrated
// by an older program, opened read-only, does not have it.
const hasRunningConfigSQL = `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'running_config'`

const lastConfigSQL = `SELECT path, data, sha256, loaded_at FROM running_config WHERE id = 1`

// LastConfig returns the configuration stored by the last SaveConfig, or
// ErrNotFound when none was stored. It works on a queue opened read-only.
func (s *Store) LastConfig(ctx context.Context) (*store.StoredConfig, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, hasRunningConfigSQL).Scan(&n); err != nil {
		return nil, fmt.Errorf("last config: %w", err)
	}
	if n == 0 {
		return nil, fmt.Errorf("last config: %w", store.ErrNotFound)
	}
	c := &store.StoredConfig{}
	var at int64
	err := s.r.QueryRowContext(ctx, lastConfigSQL).Scan(&c.Path, &c.Data, &c.SHA256, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("last config: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("last config: %w", err)
	}
	c.LoadedAt = time.UnixMilli(at).UTC()
	return c, nil
}
