package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// UsageError is a start New refused for something the operator gave: a
// task no handler runs, a bad watchdog setting, or an address that would
// show the dashboard to anyone without a login. The command exits with its
// usage status.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ReadConfig loads the config file at path and returns its bytes too.
func ReadConfig(path string) (*config.Config, []byte, error) {
	data, err := config.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	defer limitLoad(data)()
	cfg, err := config.Parse(path, data)
	return cfg, data, err
}

// storeRunningConfig stores the running config's bytes and absolute path,
// for operator commands to fall back to when the file does not load.
func (d *Daemon) storeRunningConfig(ctx context.Context) error {
	path, err := filepath.Abs(d.cfg.File)
	if err != nil {
		return fmt.Errorf("store running config: %w", err)
	}
	if _, err := d.q.SaveConfig(ctx, path, d.data); err != nil {
		return fmt.Errorf("database %s: %w", d.q.Name(), err)
	}
	return nil
}

// logConfigWarnings logs what in cfg is probably a mistake but loads.
func logConfigWarnings(log *slog.Logger, cfg *config.Config) {
	for _, e := range cfg.Warnings {
		log.Warn("config warning", "file", e.File, "line", e.Line, "schedule", e.Job, "field", e.Field, "warning", e.Err.Error())
	}
}
