package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
)

// attemptRow is one attempt on a run's page.
type attemptRow struct {
	Number   int
	Worker   string // the pool that ran it
	Started  When
	Finished When
	Took     string
	Outcome  string
	Error    string
	Output   string
}

// leaseView is who holds a running job's lease.
type leaseView struct {
	Owner string
	Host  string // the pool's host and pid, when its row is kept
	Until When
}

// runPage is the data of /runs/ID, and of /run for a skipped instant.
type runPage struct {
	ID       int64
	State    string
	Schedule string
	Item     string
	Instant  When
	Key      string
	Type     string
	Attempts string
	Priority int
	Version  int // of the job's payload format
	Payload  string
	// PayloadError says why Payload is a marker (queue.CheckPayload).
	PayloadError string
	RunAt        When
	Created      When
	Started      When
	Finished     When
	Error        string
	Rows         []attemptRow
	Lease        *leaseView
	Why          []string  // why a pending job is not running
	Skip         string    // the reason of a skipped instant
	Recorded     When      // when the skip was recorded
	Live         *liveView // a running job's output so far
}

// pathJob reads the job of the request's {id}, or answers with why not.
func (s *server) pathJob(w http.ResponseWriter, r *http.Request) (*queue.Job, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("no job %q: a job's id is a positive number", r.PathValue("id")))
		return nil, false
	}
	j, err := s.q.Job(r.Context(), id)
	if err != nil {
		s.failRead(w, r, fmt.Sprintf("job %d", id), err)
		return nil, false
	}
	return j, true
}

func (s *server) run(w http.ResponseWriter, r *http.Request) {
	j, ok := s.pathJob(w, r)
	if !ok {
		return
	}
	ctx, id := r.Context(), j.ID
	data, err := s.runData(ctx, j)
	if err != nil {
		s.failRead(w, r, fmt.Sprintf("job %d", id), err)
		return
	}
	s.render(w, r, http.StatusOK, "run", fmt.Sprintf("Run %d", id), "", data)
}

// runOf redirects /run?schedule=S&instant=T&item=I to the instant's job,
// or shows its skip.
func (s *server) runOf(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name, item := q.Get("schedule"), q.Get("item")
	at, err := time.Parse(time.RFC3339Nano, q.Get("instant"))
	if err != nil {
		// An unescaped "+" in the offset reads as a space.
		at, err = time.Parse(time.RFC3339Nano, strings.ReplaceAll(q.Get("instant"), " ", "+"))
	}
	if name == "" || err != nil {
		s.fail(w, r, http.StatusBadRequest, "want schedule=NAME&instant=RFC3339[&item=ITEM]")
		return
	}
	ctx := r.Context()
	j, err := s.q.JobByKey(ctx, schedule.DedupKey(name, item, at))
	if err == nil {
		http.Redirect(w, r, fmt.Sprintf("/runs/%d", j.ID), http.StatusSeeOther)
		return
	}
	if !errors.Is(err, queue.ErrNotFound) {
		s.failRead(w, r, "run of "+name, err)
		return
	}
	sk, err := s.q.SkipAt(ctx, name, item, at)
	if err != nil {
		s.failRead(w, r, fmt.Sprintf("run of %s %s at %s", name, item, q.Get("instant")), err)
		return
	}
	loc := s.zone(name)
	data := runPage{State: outcomeSkipped, Schedule: name, Item: item, Instant: s.when(at, loc),
		Skip: string(sk.Reason), Recorded: s.when(sk.RecordedAt, loc)}
	s.render(w, r, http.StatusOK, "run", "Run of "+name+" at "+data.Instant.Text, "", data)
}

func (s *server) runData(ctx context.Context, j *queue.Job) (runPage, error) {
	loc := s.zone(j.Schedule)
	// The payload's redacted fields are masked; the command got them.
	red := s.cfg.ConfigFunc().Redactor(j.Type)
	data := runPage{ID: j.ID, State: string(j.State), Schedule: j.Schedule, Item: j.Item, Instant: s.when(j.ScheduledAt, loc),
		Key: j.Key, Type: j.Type, Attempts: fmt.Sprintf("%d of %d", j.Attempt, j.MaxAttempts), Priority: j.Priority, Version: j.Version,
		Payload: string(red.Payload(j.Payload)), RunAt: s.when(j.RunAt, loc), Created: s.when(j.CreatedAt, loc),
		Started: s.when(j.StartedAt, loc), Finished: s.when(j.FinishedAt, loc), Error: s.lastError(j)}
	if err := queue.CheckPayload(j.Payload); err != nil {
		// Not shown: it may hold secrets redact cannot find.
		data.Payload, data.PayloadError = fmt.Sprintf("[unreadable payload, %d bytes]", len(j.Payload)), err.Error()
	}
	as, err := s.q.Attempts(ctx, j.ID)
	if err != nil {
		return data, err
	}
	for _, a := range as {
		data.Rows = append(data.Rows, attemptRow{Number: a.Number, Worker: a.Worker, Started: s.when(a.StartedAt, loc),
			Finished: s.when(a.FinishedAt, loc), Took: duration(a.StartedAt, a.FinishedAt), Outcome: string(a.Outcome),
			Error: red.Attempt(j.Payload, a.Error), Output: red.Attempt(j.Payload, a.Output)})
	}
	switch j.State {
	case queue.StateRunning:
		data.Lease = &leaseView{Owner: j.Owner, Until: s.when(j.LeaseUntil, loc)}
		ds, err := s.q.Pools(ctx)
		if err != nil {
			return data, err
		}
		for _, d := range ds {
			if d.Owner == j.Owner {
				data.Lease.Host = fmt.Sprintf("pid %d on %s", d.PID, d.Host)
			}
		}
		// The attempt running has no row yet: show it as it stands.
		data.Rows = append(data.Rows, attemptRow{Number: j.Attempt, Worker: j.Owner, Started: s.when(j.StartedAt, loc),
			Took: duration(j.StartedAt, s.clock.Now()), Outcome: "running"})
		if data.Live, err = s.liveView(ctx, j, loc); err != nil {
			return data, err
		}
	case queue.StatePending:
		why, err := s.why(ctx, j, loc)
		if err != nil {
			return data, err
		}
		data.Why = why
	}
	return data, nil
}

// why says why pending job j is not running: run_at or backoff ahead, no
// daemon or handler, a concurrency or rate limit, or no free worker; and
// whether its schedule is paused. Every read is bounded but Unhandled,
// which counts ready jobs of unhandled types (usually none).
func (s *server) why(ctx context.Context, j *queue.Job, loc *time.Location) ([]string, error) {
	now := s.clock.Now()
	var why []string
	var note string // the pause, which holds no made run back
	if j.RunAt.After(now) {
		at := s.when(j.RunAt, loc)
		if j.Attempt > 0 {
			why = append(why, fmt.Sprintf("retry backoff: attempt %d of %d runs at %s (%s); the last one failed: %s",
				j.Attempt+1, j.MaxAttempts, at.Text, at.Rel, orDash(firstLine(s.lastError(j), 200))))
		} else {
			why = append(why, fmt.Sprintf("run_at in the future: it runs at %s (%s)", at.Text, at.Rel))
		}
	}
	if j.Schedule != "" {
		cursors, err := s.q.Cursors(ctx)
		if err != nil {
			return nil, err
		}
		if c, ok := cursors[j.Schedule]; ok && c.Paused {
			// A pause stops the beat, not the pool: this job still runs.
			note = fmt.Sprintf("schedule %s is paused (since %s): it makes no new runs until resumed; this one, made before, still runs",
				j.Schedule, s.when(c.PausedAt, loc).Text)
		}
	}
	if !j.RunAt.After(now) {
		h, err := s.q.Unhandled(ctx)
		if err != nil {
			return nil, err
		}
		switch {
		case h.Known && h.Pools == 0:
			why = append(why, "no daemon is running on this database: it runs when one starts")
		case slices.ContainsFunc(h.Waiting, func(w store.Waiting) bool { return w.Type == j.Type && w.Version == 0 }):
			why = append(why, fmt.Sprintf("waiting for a handler: no running daemon has a handler for task %s", j.Type))
		default:
			i := slices.IndexFunc(h.Waiting, func(w store.Waiting) bool { return w.Type == j.Type && w.Version == j.Version })
			if i >= 0 {
				why = append(why, fmt.Sprintf("waiting for a worker that accepts version %d of task %s: the running daemons accept %s",
					j.Version, j.Type, versionList(h.Waiting[i].Accepted)))
			}
		}
		if t, ok := s.cfg.ConfigFunc().Tasks[j.Type]; ok && t.Concurrency > 0 {
			// The limit is per daemon: reached when running jobs fill
			// every live daemon's share.
			daemons, err := s.liveDaemons(ctx)
			if err != nil {
				return nil, err
			}
			limit := min(t.Concurrency*max(daemons, 1), queue.MaxList)
			running, err := s.q.List(ctx, queue.Filter{State: queue.StateRunning, Type: j.Type, Limit: limit})
			if err != nil {
				return nil, err
			}
			if len(running) >= limit {
				why = append(why, fmt.Sprintf("concurrency limit: %s of task %s running, its concurrency is %d per daemon",
					plural(len(running), "job"), j.Type, t.Concurrency))
			}
		}
		if t, ok := s.cfg.ConfigFunc().Tasks[j.Type]; ok && t.Rate > 0 {
			next, key, err := s.q.RateNextStart(ctx, j.Type, t.TypeConfig().Rate, j.Payload)
			if err != nil {
				return nil, err
			}
			if next.After(now) {
				of := "task " + j.Type
				switch {
				case t.RateKey != "" && t.Redactor() != nil:
					of = fmt.Sprintf("task %s for this job's %s", j.Type, t.RateKey) // the key may be a secret
				case t.RateKey != "":
					of = fmt.Sprintf("task %s for %s %q", j.Type, t.RateKey, key)
				}
				at := s.when(next, loc)
				why = append(why, fmt.Sprintf("rate limit: %s starts at most %d per %s; the next start is allowed at %s (%s)",
					of, t.Rate, queue.ShortDuration(t.RatePer), at.Text, at.Rel))
			}
		}
	}
	if len(why) == 0 {
		why = append(why, "ready: it waits for a free worker")
	}
	if note != "" {
		why = append(why, note)
	}
	return why, nil
}

// liveDaemons counts processes with a live pool row, one row per pool.
func (s *server) liveDaemons(ctx context.Context) (int, error) {
	ds, err := s.q.Pools(ctx)
	if err != nil {
		return 0, err
	}
	now := s.q.Clock().Now() // the rows' clock: on PostgreSQL the server's
	seen := map[string]bool{}
	for _, d := range ds {
		if d.Alive(now) {
			seen[d.Host+"\x00"+strconv.Itoa(d.PID)] = true
		}
	}
	return len(seen), nil
}

// versionList is vs as "version 1" or "versions 1, 2 and 3".
func versionList(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	if len(parts) < 2 {
		return "version " + strings.Join(parts, "")
	}
	return "versions " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// plural returns "1 job" or "n jobs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
