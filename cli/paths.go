package cli

import (
	"os"
	"path/filepath"

	"scheduler/schedule"
)

// Where the config and the database are found when no flag names them.
const (
	// envConfig names the config file; -config overrides it.
	envConfig = "SCHEDULER_CONFIG"
	// envDB names the database; -db overrides it, and it overrides the
	// config's [scheduler].db.
	envDB = "SCHEDULER_DB"
	// localConfig is the config of a checkout or a working directory.
	localConfig = "schedules.toml"
	// installedConfig is the config of an installed host (README, "Running
	// under systemd"), used when the working directory has none.
	installedConfig = "/etc/scheduler/schedules.toml"
)

// configPath is the config file the command reads: -config, else
// $SCHEDULER_CONFIG, else ./schedules.toml when it exists, else
// /etc/scheduler/schedules.toml when that exists, else ./schedules.toml (so
// that the error names the file a newcomer expects).
func configPath(flagValue string, getenv func(string) string, exists func(string) bool) string {
	switch {
	case flagValue != "":
		return flagValue
	case getenv(envConfig) != "":
		return getenv(envConfig)
	case exists(localConfig):
		return localConfig
	case exists(installedConfig):
		return installedConfig
	}
	return localConfig
}

// fileExists reports whether path names something that can be stat'ed; a
// file that exists but cannot be read still counts, so that its error is
// reported instead of silently falling back to another file.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !os.IsNotExist(err)
}

// databasePath is -db, else $SCHEDULER_DB, else the config's [scheduler].db
// (relative to the config file's directory; default scheduler.db beside the
// config). The daemon, -check and every operator command use it, so they
// agree on the file given the same flags and environment.
func databasePath(o *options, cfg *schedule.Config) string {
	if o.db != "" {
		return o.db
	}
	db := schedule.DefaultDB
	if cfg != nil && cfg.Scheduler.DB != "" {
		db = cfg.Scheduler.DB
	}
	if filepath.IsAbs(db) {
		return db
	}
	return filepath.Join(filepath.Dir(o.config), db)
}
