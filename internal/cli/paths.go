package cli

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/scheduler-run/scheduler/internal/daemon"
	"github.com/scheduler-run/scheduler/schedule/config"
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
	// installedConfig is used when the working directory has none.
	installedConfig = "/etc/scheduler/schedules.toml"
)

// configPath is -config, else $SCHEDULER_CONFIG, else the first of
// localConfig and installedConfig that exists, else localConfig, the file
// a newcomer expects an error to name.
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

// configCandidates are the files configPath looks at, in order.
func configCandidates(flagValue string, getenv func(string) string) []string {
	switch {
	case flagValue != "":
		return []string{flagValue}
	case getenv(envConfig) != "":
		return []string{getenv(envConfig)}
	}
	return []string{localConfig, installedConfig}
}

// configNotFoundError is the error of a command that found no config file.
type configNotFoundError struct {
	looked []string // the paths looked at
	err    error
}

func (e *configNotFoundError) Error() string {
	return "no config file: not found at " + strings.Join(e.looked, " or ")
}

func (e *configNotFoundError) Unwrap() error { return e.err }

// fileExists reports whether path exists. An unreadable file counts, so
// that its error is reported rather than another file used.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !os.IsNotExist(err)
}

// databasePath is -db, else $SCHEDULER_DB, else the config's
// [scheduler].db, relative to the config's directory (default
// scheduler.db). The environment beats the file so that a unit's
// EnvironmentFile= can hold a password that schedules.toml need not.
// Every command uses it, so all agree on the database.
func databasePath(flag string, getenv func(string) string, configFile string, cfg *config.Config) string {
	setting := ""
	if cfg != nil {
		setting = cfg.Scheduler.DB
	}
	return databasePathOf(flag, getenv, configFile, setting)
}

// databasePathOf is databasePath with [scheduler].db given as setting
// ("" for the default), such as one read from a broken file.
func databasePathOf(flag string, getenv func(string) string, configFile, setting string) string {
	if flag != "" {
		return flag
	}
	if env := getenv(envDB); env != "" {
		return env
	}
	db := config.DefaultDB
	if setting != "" {
		db = setting
	}
	if isDSN(db) || filepath.IsAbs(db) {
		return db
	}
	return filepath.Join(filepath.Dir(configFile), db)
}

// loadConfig reads the config file and names the database. When the file
// does not load, operator commands use the daemon's stored config
// (lastgood.go); the daemon and -check fail.
func (a *app) loadConfig(ctx context.Context) error {
	o := a.o
	flagConfig := o.config
	o.config = configPath(o.config, getenv, fileExists)
	cfg, data, cerr := daemon.ReadConfig(o.config)
	if errors.Is(cerr, fs.ErrNotExist) {
		cerr = &configNotFoundError{looked: configCandidates(flagConfig, getenv), err: cerr}
	}
	a.db = databasePath(o.db, getenv, o.config, cfg)
	if cerr != nil && data != nil && o.db == "" && getenv(envDB) == "" {
		// A broken file whose db line still reads names the database.
		if db, ok := config.RecoverDB(data); ok {
			a.db, a.dbRecovered = databasePathOf("", getenv, o.config, db), true
		}
	}
	a.dbPath = redactDSN(a.db)
	if o.db == "" {
		// o.db now says whether the database was named outside the file.
		o.db = getenv(envDB)
	}
	switch {
	case cerr == nil:
		a.cfg, a.cfgData = cfg, data
	case operatorCommand(o):
		return a.useLastGood(ctx, cerr)
	default:
		printConfigErrors(a.stderr, cerr, configOutcome(o))
		return &usageError{ErrReported}
	}
	return nil
}
