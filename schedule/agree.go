package schedule

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// Agreement is what the live daemons on one database run, as the rows of
// their pools record it (queue.Process.Config and ConfigAt), and which of
// their configs rules the schedules: the one loaded last, by the
// database's clock (the greater hash on a tie). Only the beats of the
// daemons that run the ruling config materialise instants; a beat whose
// daemon runs another sits out until it runs that one or the ruling
// daemon goes (see Beat). During a rolling deploy of a new config, the
// first daemon to load it takes over at once, and every instant carries
// the fan-out items of one config, never a mix.
type Agreement struct {
	// Configs counts the distinct configs among the live daemons: 1 when
	// they agree, 0 when none records one.
	Configs int
	// Ruling is the hex SHA-256 of the config that rules; RulingAt is when
	// it was loaded. Empty and zero when Configs is 0.
	Ruling   string
	RulingAt time.Time
	// Daemons are the live daemons that record a config, one per process
	// (its newest row), sorted by host and pid.
	Daemons []DaemonConfig
	// SelfRules reports that the config of the process Agree was given
	// rules: its beat materialises. False when it was given none.
	SelfRules bool
}

// DaemonConfig is one live daemon's config.
type DaemonConfig struct {
	Host     string
	PID      int
	Config   string    // hex SHA-256 of its file
	ConfigAt time.Time // when it loaded it
	Self     bool      // the process Agree was given
}

// Agreed reports whether the live daemons run one config (or none records
// one).
func (a Agreement) Agreed() bool { return a.Configs <= 1 }

// String says, for a log or a page, which daemon runs which config and
// which rules: "pid 12 on a: 1a2b3c4d5e6f (loaded 2026-03-01T12:00:00Z,
// rules); pid 13 on b: ...".
func (a Agreement) String() string {
	parts := make([]string, len(a.Daemons))
	for i, d := range a.Daemons {
		role := "sits out"
		if d.Config == a.Ruling {
			role = "rules"
		}
		parts[i] = fmt.Sprintf("pid %d on %s: %s (loaded %s, %s)", d.PID, d.Host, shortSHA(d.Config),
			d.ConfigAt.UTC().Format(time.RFC3339), role)
	}
	return strings.Join(parts, "; ")
}

// shortSHA is the first 12 hex digits of a SHA-256, as operators see it.
func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// Agree returns what the live daemons of ds (as queue.Client.Daemons reads
// them) run at now. When self.Config is set it stands for the rows of its
// process (same host and pid): a daemon counts the config it runs from the
// moment it loads it, before its rows say so.
func Agree(ds []store.PoolRow, self queue.Process, now time.Time) Agreement {
	type proc struct {
		host string
		pid  int
	}
	me := proc{self.Host, self.PID}
	byProc := map[proc]DaemonConfig{}
	for _, d := range ds {
		p := proc{d.Host, d.PID}
		if d.Config == "" || !d.Alive(now) || (self.Config != "" && p == me) {
			continue
		}
		// A daemon with [pools.NAME] tables has a row per pool; after a
		// reload the one rewritten first is the newest.
		if old, ok := byProc[p]; !ok || newerConfig(d.ConfigAt, d.Config, old.ConfigAt, old.Config) {
			byProc[p] = DaemonConfig{Host: d.Host, PID: d.PID, Config: d.Config, ConfigAt: d.ConfigAt}
		}
	}
	if self.Config != "" {
		byProc[me] = DaemonConfig{Host: self.Host, PID: self.PID, Config: self.Config, ConfigAt: self.ConfigAt, Self: true}
	}
	var a Agreement
	seen := map[string]bool{}
	for _, d := range byProc {
		a.Daemons = append(a.Daemons, d)
		if !seen[d.Config] {
			seen[d.Config] = true
			a.Configs++
		}
		if a.Ruling == "" || newerConfig(d.ConfigAt, d.Config, a.RulingAt, a.Ruling) {
			a.Ruling, a.RulingAt = d.Config, d.ConfigAt
		}
	}
	slices.SortFunc(a.Daemons, func(x, y DaemonConfig) int {
		return cmp.Or(strings.Compare(x.Host, y.Host), cmp.Compare(x.PID, y.PID))
	})
	a.SelfRules = self.Config != "" && self.Config == a.Ruling
	return a
}

// newerConfig reports whether the config sha loaded at at rules over
// other, loaded at otherAt: loaded later, or at the same millisecond with
// the greater hash, so that every daemon picks the same.
func newerConfig(at time.Time, sha string, otherAt time.Time, other string) bool {
	if !at.Equal(otherAt) {
		return at.After(otherAt)
	}
	return sha > other
}

// agree reads the daemons' rows and reports whether the config of this
// beat's daemon rules (see Agreement), logging a change of their
// agreement. A beat without a config rules and reads nothing.
func (b *Beat) agree(ctx context.Context, now time.Time) (bool, error) {
	b.mu.Lock()
	self := b.process
	b.mu.Unlock()
	if self.Config == "" {
		return true, nil
	}
	ds, err := b.q.Pools(ctx)
	if err != nil {
		return false, fmt.Errorf("read daemons: %w", err)
	}
	a := Agree(ds, self, now)
	b.mu.Lock()
	b.agreement = &a
	b.mu.Unlock()
	b.noteAgreement(ctx, self, a)
	return a.SelfRules, nil
}

// noteAgreement logs a when it differs from the agreement last logged: a
// warning while the live daemons run different configs, each time the
// set of configs, the ruling one or this beat's part changes; a line
// when they agree again.
func (b *Beat) noteAgreement(ctx context.Context, self queue.Process, a Agreement) {
	configs := map[string]bool{}
	for _, d := range a.Daemons {
		configs[d.Config] = true
	}
	as := ""
	if !a.Agreed() {
		as = fmt.Sprint(a.Ruling, a.SelfRules, slices.Sorted(maps.Keys(configs)))
	}
	if as == b.agreedAs {
		return
	}
	was := b.agreedAs
	b.agreedAs = as
	switch {
	case as != "":
		b.log.WarnContext(ctx, "daemons run different configs", logKeyConfig, self.Config, logKeyRuling, a.Ruling,
			logKeyMaterial, a.SelfRules, logKeyConfigs, a.Configs, logKeyDaemons, a.String())
	case was != "":
		b.log.InfoContext(ctx, "daemons agree on the config", logKeyConfig, self.Config)
	}
}
