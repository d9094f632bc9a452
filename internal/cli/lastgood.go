package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// The daemon stores the config it runs at start and each successful
// reload. Operator commands fall back to it when the file does not load,
// so that a broken edit, which the daemon refused, does not lock the
// operator out. -check and the daemon's start never fall back.

// operatorCommand reports whether o's command may use the daemon's stored
// config when the file is broken.
func operatorCommand(o *options) bool {
	return o.mode != "" && o.mode != "check"
}

// needsSchedules reports whether o's command cannot run without a config.
func needsSchedules(o *options) bool {
	return slices.Contains([]string{"trigger", "pause", "resume", "backfill", "next"}, o.mode)
}

// useLastGood makes the stored config a.cfg after fileErr, and warns once.
// The database is -db or $SCHEDULER_DB, else the broken file's
// [scheduler].db when that line reads, else the default beside the file.
// Commands that need no config (-status, -dead, ...) go on without one
// when a named database holds none. Otherwise it prints why the fallback
// failed and the file's problems, and fails.
func (a *app) useLastGood(ctx context.Context, fileErr error) error {
	a.fileErr = fileErr
	dbKnown := a.o.db != "" || a.dbRecovered
	fail := func(format string, args ...any) error {
		// The file's problems come last, as when there is no fallback.
		fmt.Fprintf(a.stderr, format+"\n", args...)
		if !dbKnown {
			fmt.Fprintf(a.stderr, "hint: pass -db or set %s to the daemon's database to work from the configuration it runs\n", envDB)
		}
		printConfigErrors(a.stderr, fileErr, configOutcome(a.o))
		return &usageError{ErrReported}
	}
	if _, err := os.Stat(a.db); err != nil && !isDSN(a.db) {
		if !dbKnown {
			if _, missing := errors.AsType[*configNotFoundError](fileErr); missing {
				return fail("no database at %s, the default beside the config; with no config file nothing says where the daemon's is", a.dbPath)
			}
			return fail("no database at %s, the default beside the config; the broken file does not say where the daemon's is", a.dbPath)
		}
		return fail("database %s: %v", a.dbPath, err)
	}
	q, err := openDatabase(ctx, a.db, engine.Config{Clock: a.clock, Logger: a.log, ReadOnly: true})
	if err != nil {
		return fail("%v", err)
	}
	stored, err := q.LastConfig(ctx)
	q.Close()
	switch {
	case errors.Is(err, queue.ErrNotFound):
		if needsSchedules(a.o) || !dbKnown {
			return fail("database %s holds no configuration loaded by the daemon (it stores one at each start and successful reload)", a.dbPath)
		}
		fmt.Fprintf(a.stderr, "warning: %s; database %s holds no configuration loaded by the daemon, going on without one; run -check to see every problem\n",
			brokenSummary(a.o.config, fileErr), a.dbPath)
		return nil
	case err != nil:
		return fail("database %s: %v", a.dbPath, err)
	}
	cfg, err := config.Parse(stored.Path, stored.Data)
	if err != nil {
		return fail("the configuration the daemon loaded at %s (sha256 %s) does not load either:\n%v",
			rfc3339(stored.LoadedAt, nil), shortSHA(stored.SHA256), err)
	}
	a.cfg, a.running = cfg, stored
	from := ""
	if !samePath(stored.Path, a.o.config) {
		from = " from " + stored.Path
	}
	fmt.Fprintf(a.stderr, "warning: %s; using the configuration the daemon loaded%s at %s (sha256 %s); run -check to see every problem\n",
		brokenSummary(a.o.config, fileErr), from, rfc3339(stored.LoadedAt, nil), shortSHA(stored.SHA256))
	return nil
}

// brokenSummary says in one line why the file at path is unusable.
func brokenSummary(path string, err error) string {
	if nf, ok := errors.AsType[*configNotFoundError](err); ok {
		return nf.Error()
	}
	if es, ok := errors.AsType[config.Errors](err); ok && len(es) > 0 {
		return fmt.Sprintf("%s is broken (%d problem(s), first: %v)", path, len(es), es[0])
	}
	return fmt.Sprintf("%s cannot be loaded (%v)", path, err)
}

// Values of configReport.State.
const (
	configLoaded  = "loaded"  // the file is what the daemon runs
	configChanged = "changed" // the file loads but the daemon has not reloaded it
	configBroken  = "broken"  // the file does not load; the daemon runs the stored config
	configMissing = "missing" // no file was found; the daemon runs the stored config
	configOther   = "other"   // the daemon runs another file
)

// configReport is what -status says about the daemon's config.
type configReport struct {
	File       string    `json:"file"`        // the file this command read
	DaemonFile string    `json:"daemon_file"` // the file the daemon loaded
	LoadedAt   string    `json:"loaded_at"`
	SHA256     string    `json:"sha256"`                // of what the daemon loaded
	FileSHA256 string    `json:"file_sha256,omitempty"` // of the file now; empty when it does not load
	State      string    `json:"state"`
	loadedAt   time.Time // LoadedAt, for what -status infers from it
}

// configStatus compares the file with q's stored config; nil when none.
func (a *app) configStatus(ctx context.Context, q *queue.Client) (*configReport, error) {
	stored := a.running
	if stored == nil {
		var err error
		stored, err = q.LastConfig(ctx)
		if errors.Is(err, queue.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
	r := &configReport{File: a.o.config, DaemonFile: stored.Path, LoadedAt: rfc3339(stored.LoadedAt, nil), SHA256: stored.SHA256,
		loadedAt: stored.LoadedAt}
	if a.cfgData != nil {
		r.FileSHA256 = store.ConfigSHA256(a.cfgData)
	}
	switch {
	case errors.As(a.fileErr, new(*configNotFoundError)):
		r.State = configMissing
	case a.fileErr != nil:
		r.State = configBroken
	case !samePath(stored.Path, a.o.config):
		r.State = configOther
	case r.FileSHA256 != stored.SHA256:
		r.State = configChanged
	default:
		r.State = configLoaded
	}
	return r, nil
}

// String is the config line of -status.
func (r *configReport) String() string {
	switch r.State {
	case configMissing:
		return fmt.Sprintf("%s not found: the daemon runs what it loaded at %s (sha256 %s)", r.File, r.LoadedAt, shortSHA(r.SHA256))
	case configBroken:
		return fmt.Sprintf("%s is broken: the daemon runs what it loaded at %s (sha256 %s); run -check", r.File, r.LoadedAt, shortSHA(r.SHA256))
	case configChanged:
		return fmt.Sprintf("%s changed since the daemon loaded it at %s (sha256 %s, now %s): the daemon has not reloaded it yet",
			r.File, r.LoadedAt, shortSHA(r.SHA256), shortSHA(r.FileSHA256))
	case configOther:
		return fmt.Sprintf("the daemon runs %s, loaded at %s (sha256 %s), not %s", r.DaemonFile, r.LoadedAt, shortSHA(r.SHA256), r.File)
	}
	return fmt.Sprintf("%s, as the daemon loaded it at %s (sha256 %s)", r.File, r.LoadedAt, shortSHA(r.SHA256))
}

// shortSHA is a SHA-256's first 12 hex digits.
func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// samePath reports whether a and b have the same absolute path.
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && filepath.Clean(aa) == filepath.Clean(bb)
}
