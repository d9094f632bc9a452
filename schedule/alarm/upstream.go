package alarm

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// scheduleOf returns the schedule of cfg called name, with cron or after.
func scheduleOf(cfg *config.Config, name string) (*config.Schedule, bool) {
	if s, ok := cfg.Schedule(name); ok {
		return s, true
	}
	return cfg.Follower(name)
}

// watchedFollowers returns the watched schedules with after that require
// done: those an upstream failure skips.
func watchedFollowers(cfg *config.Config) []*config.Schedule {
	var out []*config.Schedule
	for _, s := range cfg.Followers() {
		if s.Watched() && s.Require == config.RequireDone {
			out = append(out, s)
		}
	}
	return out
}

// followedByWatched reports whether a watched schedule with after follows
// the schedule called name and requires done: a dead job of it may skip
// that schedule.
func followedByWatched(cfg *config.Config, name string) bool {
	for _, d := range cfg.Downstream[name] {
		if d.Watched() && d.Require == config.RequireDone {
			return true
		}
	}
	return false
}

// judgeUpstream raises, once, an upstream alarm for each skip of s (a
// schedule with after) recorded as upstream failed after its mark less
// deadLookback, and adds them and its moved mark to j. Such a schedule has
// no cursor and no misfires: its mark's Misfire is how far its skips'
// recorded times were read. A skip's recorded time is taken before its
// transaction commits, hence the look back, as for dead jobs. The skip of
// a manual run has the run's item (store.ManualRunItem) and the time of
// the run, so its alarm's key differs from every instant's and every other
// run's.
func (e *Evaluator) judgeUpstream(ctx context.Context, j *judgement, s *config.Schedule) error {
	m, known := e.marks[s.Name]
	if !known {
		m = store.AlarmMark{Schedule: s.Name, Misfire: j.now}
	}
	from := later(m.Misfire.Add(-deadLookback), e.upstreamAfter[s.Name])
	skips, err := e.q.UpstreamFailedSkips(ctx, s.Name, from, alarmRows)
	if err != nil {
		return err
	}
	through := j.now
	if len(skips) == alarmRows {
		// A flood: the next evaluation reads on from the last skip read.
		through = skips[len(skips)-1].RecordedAt
		e.upstreamAfter[s.Name] = through
	}
	for _, sk := range skips {
		a := store.NewAlarm{Schedule: s.Name, Item: sk.Item, ScheduledAt: sk.ScheduledAt, Kind: store.AlarmUpstream, At: sk.RecordedAt}
		a.Key = alarmKey(a)
		if _, ok := e.seen[a.Key]; ok {
			continue
		}
		if a.JobID, a.Error, err = e.upstreamFailure(ctx, s, sk); err != nil {
			return err
		}
		p := proposed{s: s, a: a}
		if s.Deadline > 0 {
			p.limit = sk.ScheduledAt.Add(s.Deadline)
		}
		j.props = append(j.props, p)
	}
	nm := m
	nm.Misfire = later(m.Misfire, through)
	if !known || nm.Misfire.Sub(m.Misfire) >= deadLookback || len(skips) == alarmRows {
		j.marks = append(j.marks, nm)
	}
	return nil
}

// upstreamFailure describes the jobs of the upstream run that skipped s
// (sk) and did not succeed, "upstream failed: 1 of 3 items did not succeed
// (dead: customer=globex)", and returns the first such job's id. The run
// is an instant of the upstream, or a manual run of it, whose skip names
// it (store.ManualRunOf) and whose jobs are the members of s's fan-in;
// the text then names the run: "1 of 3 items of manual run KEY".
func (e *Evaluator) upstreamFailure(ctx context.Context, s *config.Schedule, sk store.Skip) (int64, string, error) {
	run, manual := store.ManualRunOf(sk.Item)
	var jobs []*queue.Job
	if manual {
		var err error
		if jobs, err = e.q.FanInJobs(ctx, store.ManualFanInKey(s.Name, run), store.MaxAlarmRows); err != nil {
			return 0, "", err
		}
	} else {
		ijs, err := e.q.InstantJobs(ctx, s.After, sk.ScheduledAt.Add(-time.Millisecond), sk.ScheduledAt, store.MaxAlarmRows)
		if err != nil {
			return 0, "", err
		}
		for _, j := range ijs {
			if j.ScheduledAt.Equal(sk.ScheduledAt) {
				jobs = append(jobs, j.Job)
			}
		}
	}
	return describeFailure(jobs, run)
}

// describeFailure describes those of jobs, the items of an instant or of
// the manual run run, that did not succeed, and returns the first such
// job's id.
func describeFailure(jobs []*queue.Job, run string) (int64, string, error) {
	of := ""
	if run != "" {
		of = " of manual run " + run
	}
	var jobID int64
	failed := 0
	byState := map[queue.State][]string{}
	var states []queue.State
	for _, j := range jobs {
		if j.State == queue.StateDone {
			continue
		}
		failed++
		if jobID == 0 {
			jobID = j.ID
		}
		if byState[j.State] == nil {
			states = append(states, j.State)
		}
		byState[j.State] = append(byState[j.State], cmp.Or(j.Item, j.Key))
	}
	if failed == 0 && run != "" {
		return 0, string(store.SkipUpstreamFailed) + ": manual run " + run, nil
	}
	if failed == 0 {
		return 0, string(store.SkipUpstreamFailed), nil
	}
	var lists []string
	for _, st := range states {
		lists = append(lists, string(st)+": "+strings.Join(byState[st], ", "))
	}
	noun := "items"
	if len(jobs) == 1 {
		noun = "item"
	}
	return jobID, fmt.Sprintf("%s: %d of %d %s%s did not succeed (%s)", store.SkipUpstreamFailed, failed, len(jobs), noun, of,
		strings.Join(lists, "; ")), nil
}
