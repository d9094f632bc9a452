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

// Agreement is which configs the live daemons on one database run, as
// their pools' rows record them, and which rules: the one loaded last by
// the database's clock (the greater hash on a tie). Only beats of daemons
// running the ruling config materialise; the others sit out. In a rolling
// deploy the first daemon to load a new config takes over at once, and
// every instant carries the fan-out items of one config, never a mix.
type Agreement struct {
	// Configs counts the distinct configs: 1 when the daemons agree, 0
	// when none records one.
	Configs int
	// Ruling is the ruling config's hex SHA-256, RulingAt when it was
	// loaded; empty when Configs is 0.
	Ruling   string
	RulingAt time.Time
	// Daemons are the live daemons that record a config, one per process,
	// sorted by host and pid.
	Daemons []DaemonConfig
	// SelfRules reports that the config of Agree's self rules.
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

// Agreed reports whether the live daemons run at most one config.
func (a Agreement) Agreed() bool { return a.Configs <= 1 }

// String says which daemon runs which config, and which rules:
// "pid 12 on a: 1a2b3c4d5e6f (loaded 2026-03-01T12:00:00Z, rules); ...".
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

// shortSHA is a SHA-256 as operators see it.
func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// Agree returns what the live daemons of ds run at now. A set self.Config
// replaces the rows of its process: a daemon counts its config from the
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
		// A daemon has a row per pool; the newest counts.
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

// newerConfig reports whether sha, loaded at at, rules over other: loaded
// later, or with the greater hash on a tie, so every daemon picks alike.
func newerConfig(at time.Time, sha string, otherAt time.Time, other string) bool {
	if !at.Equal(otherAt) {
		return at.After(otherAt)
	}
	return sha > other
}

// agree reports whether this beat's config rules, and logs a change of
// the agreement. A beat without a config rules and reads nothing.
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

// noteAgreement warns while the daemons disagree, each time the configs,
// the ruling one or this beat's part change, and logs when they agree
// again.
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
