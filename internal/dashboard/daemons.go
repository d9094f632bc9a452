package dashboard

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// daemonView is one live daemon on the daemons page: a process, with the
// rows of its pools.
type daemonView struct {
	Host      string
	PID       int
	Version   string
	Config    string // its config's SHA-256, short; "-" when it records none
	ConfigAt  When
	Started   When
	Uptime    string
	LastSeen  When
	Pools     []poolView
	Busy      int // its running jobs, over every pool
	processID string
}

// poolView is one worker pool of a daemon and the jobs it runs now.
type poolView struct {
	Owner   string
	Workers int // jobs it runs at once; 0 when its row does not say
	Jobs    []runningJob
}

// runningJob is a job a pool runs now: one busy worker.
type runningJob struct {
	ID       int64
	Type     string
	Schedule string
	Item     string
	Manual   bool
	Started  When
	For      string // how long it has run
}

// daemonsPage is the data of /daemons.
type daemonsPage struct {
	Daemons []daemonView
	Orphans []runningJob // running under the lease of no live pool
	Note    string       // what the page cannot see
}

// daemons is /daemons: every live daemon with its pools and what each runs.
func (s *server) daemons(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rows, err := s.q.Pools(ctx)
	if err != nil {
		s.failRead(w, r, "pools", err)
		return
	}
	running, err := s.q.List(ctx, queue.Filter{State: queue.StateRunning, Limit: queue.MaxList})
	if err != nil {
		s.failRead(w, r, "running jobs", err)
		return
	}
	data := daemonsPageOf(rows, running, s.q.Clock().Now(), s.when)
	if len(running) == queue.MaxList {
		data.Note = "Only the newest " + strconv.Itoa(queue.MaxList) + " running jobs are shown."
	}
	s.render(w, r, http.StatusOK, "daemons", "Daemons", "daemons", data)
}

// daemonsPageOf groups the live pool rows by process and the running jobs
// by pool. now is the rows' clock (on PostgreSQL the server's).
func daemonsPageOf(rows []store.PoolRow, running []*queue.Job, now time.Time, when func(time.Time, *time.Location) When) daemonsPage {
	byOwner := map[string][]*queue.Job{}
	for _, j := range running {
		byOwner[j.Owner] = append(byOwner[j.Owner], j)
	}
	var data daemonsPage
	index := map[string]int{}
	for _, row := range rows {
		if !row.Alive(now) {
			continue
		}
		id := row.Host + "\x00" + strconv.Itoa(row.PID)
		i, ok := index[id]
		if !ok {
			i = len(data.Daemons)
			index[id] = i
			data.Daemons = append(data.Daemons, daemonView{Host: row.Host, PID: row.PID, Version: row.Version, Config: "-", processID: id})
		}
		d := &data.Daemons[i]
		if row.Config != "" && (d.Config == "-" || row.ConfigAt.After(parseWhen(d.ConfigAt))) {
			d.Config, d.ConfigAt = shortHash(row.Config), when(row.ConfigAt, nil)
		}
		if d.Started.IsZero() || row.StartedAt.Before(parseWhen(d.Started)) {
			d.Started, d.Uptime = when(row.StartedAt, nil), durationText(now.Sub(row.StartedAt))
		}
		if row.LastSeen.After(parseWhen(d.LastSeen)) {
			d.LastSeen = when(row.LastSeen, nil)
		}
		p := poolView{Owner: row.Owner, Workers: row.Workers}
		for _, j := range byOwner[row.Owner] {
			p.Jobs = append(p.Jobs, runningJob{ID: j.ID, Type: j.Type, Schedule: j.Schedule, Item: j.Item, Manual: j.Schedule != "" && j.ScheduledAt.IsZero(),
				Started: when(j.StartedAt, nil), For: durationText(now.Sub(j.StartedAt))})
		}
		delete(byOwner, row.Owner)
		d.Busy += len(p.Jobs)
		d.Pools = append(d.Pools, p)
	}
	for _, d := range data.Daemons {
		slices.SortFunc(d.Pools, func(a, b poolView) int { return cmp.Compare(a.Owner, b.Owner) })
	}
	slices.SortFunc(data.Daemons, func(a, b daemonView) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.PID, b.PID))
	})
	for _, js := range byOwner {
		for _, j := range js {
			data.Orphans = append(data.Orphans, runningJob{ID: j.ID, Type: j.Type, Schedule: j.Schedule, Item: j.Item,
				Started: when(j.StartedAt, nil), For: durationText(now.Sub(j.StartedAt))})
		}
	}
	slices.SortFunc(data.Orphans, func(a, b runningJob) int { return cmp.Compare(a.ID, b.ID) })
	return data
}

// parseWhen is the instant of w; zero for the zero When.
func parseWhen(w When) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, w.RFC3339)
	return t
}

// shortHash is a SHA-256's first 12 hex digits.
func shortHash(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// durationText is d to the second: "3h2m5s".
func durationText(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Truncate(time.Second).String()
}
