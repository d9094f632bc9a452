package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// afterFanIns is how many of a schedule's fan-ins its page lists.
const afterFanIns = 20

// chainLink is one link of a chain of after: Down runs once per instant of
// Up, when the instant's jobs have ended.
type chainLink struct {
	Up, Down string
	Require  string
	Waiting  string // "waiting: 2 of 3 ended", or ""
}

// UpHref and DownHref are the links' schedule pages.
func (l chainLink) UpHref() string   { return "/schedules/" + url.PathEscape(l.Up) }
func (l chainLink) DownHref() string { return "/schedules/" + url.PathEscape(l.Down) }

// chain returns the links of the chain sc is in, from the schedule with
// cron at its head, depth first; nil when none follows that schedule.
func (s *server) chain(ctx context.Context, cfg *config.Config, sc *config.Schedule) ([]chainLink, error) {
	origin := cfg.Origin(sc)
	if origin == nil {
		return nil, nil
	}
	var links []chainLink
	var walk func(up string) error
	walk = func(up string) error {
		for _, d := range cfg.Downstream[up] {
			l := chainLink{Up: up, Down: d.Name, Require: d.Require}
			fs, err := s.q.FanInsOf(ctx, d.Name, 1)
			if err != nil {
				return err
			}
			if len(fs) == 1 && fs[0].State == store.FanInWaiting {
				l.Waiting = fmt.Sprintf("waiting: %d of %d ended", fs[0].Ended, fs[0].Expected)
			}
			links = append(links, l)
			if err := walk(d.Name); err != nil {
				return err
			}
		}
		return nil
	}
	return links, walk(origin.Name)
}

// fanInRow is one upstream instant on the page of a schedule with after.
type fanInRow struct {
	Instant  When
	State    string
	Ended    int
	Expected int
	JobID    int64
}

// afterPage is the data of /schedules/NAME for a schedule with after.
type afterPage struct {
	Name, After, Require, Task, Zone string
	Chain                            []chainLink
	FanIns                           []fanInRow
}

// after serves the page of f, a schedule with after: the chain it is in
// and its newest upstream instants, each with how many of its jobs ended.
func (s *server) after(w http.ResponseWriter, r *http.Request, cfg *config.Config, f *config.Schedule) {
	ctx := r.Context()
	chain, err := s.chain(ctx, cfg, f)
	if err != nil {
		s.failRead(w, r, "fan-ins", err)
		return
	}
	fs, err := s.q.FanInsOf(ctx, f.Name, afterFanIns)
	if err != nil {
		s.failRead(w, r, "fan-ins of "+f.Name, err)
		return
	}
	data := afterPage{Name: f.Name, After: f.After, Require: f.Require, Task: f.Task, Zone: f.Location.String(), Chain: chain}
	for _, fi := range fs {
		data.FanIns = append(data.FanIns, fanInRow{Instant: s.when(fi.ScheduledAt, f.Location), State: string(fi.State),
			Ended: fi.Ended, Expected: fi.Expected, JobID: fi.JobID})
	}
	s.render(w, r, http.StatusOK, "after", "Schedule "+f.Name, "schedules", data)
}
