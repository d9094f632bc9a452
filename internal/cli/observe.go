package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
)

// daemonView is a daemon's row in the pools table as -status shows it.
type daemonView struct {
	Owner     string `json:"owner"`
	PID       int    `json:"pid"`
	Host      string `json:"host"`
	Version   string `json:"version"`
	StartedAt string `json:"started_at"`
	LastSeen  string `json:"last_seen"`
	Alive     bool   `json:"alive"`
	Workers   int    `json:"workers"` // jobs the pool runs at once; 0 when its row does not say
	// The daemon's config and when it loaded it; null when it records none.
	ConfigSHA256   *string `json:"config_sha256"`
	ConfigLoadedAt *string `json:"config_loaded_at"`
}

// configsView is what -status says of the configs of the live daemons.
type configsView struct {
	Count int `json:"count"` // distinct configs among them: 1 when they agree
	// Ruling is the SHA-256 of the newest, whose daemons materialise
	// instants; null when none records a config.
	Ruling   *string `json:"ruling_sha256"`
	RulingAt *string `json:"ruling_loaded_at"`
}

// presenceKept is store.PresenceKept: how long a daemon that did not stop
// cleanly keeps its pool rows. A clean stop deletes them at once.
const presenceKept = 7 * 24 * time.Hour

// noDaemonSeen says, when no pool row is kept, what loadedAt tells of the
// last daemon (zero: none ever ran). An unclean stop leaves rows for
// presenceKept, so a daemon that loaded its config within that time
// stopped cleanly, after loadedAt. The stop's time is not kept.
func noDaemonSeen(loadedAt, now time.Time) string {
	switch {
	case loadedAt.IsZero():
		return "no daemon has run on this database"
	case now.Sub(loadedAt) < presenceKept-time.Minute:
		return fmt.Sprintf("the last daemon stopped cleanly, some time after %s when it loaded its config", rfc3339(loadedAt, time.UTC))
	}
	return fmt.Sprintf("none seen in the last %d days; the last daemon loaded its config at %s, and stopped cleanly or was lost since",
		presenceKept/(24*time.Hour), rfc3339(loadedAt, time.UTC))
}

// lastSkipView is a schedule's newest skip in -status.
type lastSkipView struct {
	Instant string `json:"instant"`
	Item    string `json:"item"`
	Reason  string `json:"reason"`
}

// observeStatus adds the daemons, each schedule's last instant summed over
// its items, and its skips of the last day. Each read is one index range
// per schedule.
func (a *app) observeStatus(ctx context.Context, q *queue.Client, rep *statusReport) error {
	now := q.Clock().Now()
	ds, err := q.Pools(ctx)
	if err != nil {
		return err
	}
	rep.Daemons = []daemonView{}
	for _, d := range ds {
		alive := d.Alive(now)
		v := daemonView{Owner: d.Owner, PID: d.PID, Host: d.Host, Version: d.Version,
			StartedAt: rfc3339(d.StartedAt, time.UTC), LastSeen: rfc3339(d.LastSeen, time.UTC), Alive: alive, Workers: d.Workers}
		if d.Config != "" {
			v.ConfigSHA256, v.ConfigLoadedAt = ptr(d.Config), ptr(rfc3339(d.ConfigAt, time.UTC))
		}
		rep.Daemons = append(rep.Daemons, v)
		rep.DaemonAlive = rep.DaemonAlive || alive
	}
	ag := schedule.Agree(ds, queue.Process{}, now)
	rep.Configs = &configsView{Count: ag.Configs}
	if ag.Ruling != "" {
		rep.Configs.Ruling, rep.Configs.RulingAt = ptr(ag.Ruling), ptr(rfc3339(ag.RulingAt, time.UTC))
	}
	for i := range rep.Schedules {
		ss := &rep.Schedules[i]
		loc := a.zone(ss.Name)
		if ss.last != nil {
			// The stored instant: LastRun is only to the second.
			o, err := q.Instant(ctx, ss.Name, ss.last.ScheduledAt)
			if err != nil {
				return err
			}
			ss.LastItems, ss.LastStates = o.Jobs, stateCounts(o)
			if o.Jobs > 0 {
				ss.LastState = ptr(string(worstState(o.States)))
			}
		}
		if ss.lastManual != nil {
			if err := a.observeManual(ctx, q, ss); err != nil {
				return err
			}
		}
		if err := a.observeDeadline(ctx, q, ss); err != nil {
			return err
		}
		sum, err := q.SkipSummary(ctx, ss.Name, now.Add(-24*time.Hour))
		if err != nil {
			return err
		}
		ss.SkipsLastDay = sum.Count
		if sum.Last != nil {
			ss.LastSkip = &lastSkipView{Instant: rfc3339(sum.Last.ScheduledAt, loc), Item: sum.Last.Item, Reason: string(sum.Last.Reason)}
		}
	}
	return nil
}

// stateSeverity orders states, most severe first: an instant with one
// dead item is dead.
// A discarded item failed: it is worse than a cancelled or done one.
var stateSeverity = []queue.State{queue.StateDead, queue.StateRunning, queue.StatePending, queue.StateDiscarded, queue.StateCancelled, queue.StateDone}

// stateCounts are o's jobs by state, as -status prints them.
func stateCounts(o store.InstantOutcome) map[string]int {
	m := map[string]int{}
	for st, n := range o.States {
		m[string(st)] = n
	}
	return m
}

// worstState is the most severe state in m with jobs, or "".
func worstState(m map[queue.State]int) queue.State {
	for _, st := range stateSeverity {
		if m[st] > 0 {
			return st
		}
	}
	return ""
}

// observeManual sums the last manual run over its items: the newest
// manual jobs up to LastManualJobID whose keys end alike, one per item.
func (a *app) observeManual(ctx context.Context, q *queue.Client, ss *scheduleStatus) error {
	j := ss.lastManual
	prefix := j.Schedule + "|" + j.Item
	if !strings.HasPrefix(j.Key, prefix+"|") {
		return nil // not a key -trigger made: the one job stands alone
	}
	span := 1
	if a.cfg != nil {
		if s, ok := a.cfg.Schedule(ss.Name); ok {
			span = len(s.Items())
		}
	}
	o, err := q.ManualRun(ctx, ss.Name, j.ID, span, j.Key[len(prefix):])
	if err != nil {
		return err
	}
	ss.LastManualItems, ss.LastManualStates = o.Jobs, stateCounts(o)
	if o.Jobs > 0 {
		ss.LastManualState = ptr(string(worstState(o.States)))
	}
	return nil
}
