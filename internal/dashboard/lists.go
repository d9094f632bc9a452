package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// jobRow is one job on /jobs.
type jobRow struct {
	ID       int64
	State    string
	Type     string
	Schedule string
	Item     string
	Instant  When
	Attempts string
	Created  When
	Finished When
	Key      string
	Error    string // the last error of a dead or discarded job
	// When is the list's one time: the finish of a finished job, else its
	// instant, else its creation; WhenWhat says which.
	When     When
	WhenWhat string
}

// jobsFilter is the filter form of /jobs, as given.
type jobsFilter struct {
	State    string
	Task     string
	Schedule string
	Key      string
	Payload  string // text the payload holds
}

// stateCount is one state's total from the job counts.
type stateCount struct {
	State string
	N     int
}

// jobsPage is the data of /jobs.
type jobsPage struct {
	Filter jobsFilter
	States []string
	Counts []stateCount
	Rows   []jobRow
	Older  string // the link to the next page; "" on the last
	Newest string // the link to the first page; "" on it
	Note   string // what a filter by task or schedule cannot see
	// PayloadBound is how many jobs a payload search reads per page.
	PayloadBound int
}

var jobStates = []string{string(queue.StatePending), string(queue.StateRunning), string(queue.StateDone),
	string(queue.StateDead), string(queue.StateCancelled), string(queue.StateDiscarded)}

func (s *server) jobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := jobsFilter{State: q.Get("state"), Task: strings.TrimSpace(q.Get("task")), Schedule: strings.TrimSpace(q.Get("schedule")),
		Key: q.Get("key"), Payload: q.Get("payload")}
	if f.State != "" && !contains(jobStates, f.State) {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("state %q: want one of %s", f.State, strings.Join(jobStates, ", ")))
		return
	}
	var before int64
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("before %q: want a job id", b))
			return
		}
		before = n
	}
	ctx := r.Context()
	js, err := s.q.List(ctx, queue.Filter{State: queue.State(f.State), Type: f.Task, Schedule: f.Schedule, KeyPrefix: f.Key,
		PayloadContains: f.Payload, BeforeID: before, Limit: JobsPage})
	if err != nil {
		s.failRead(w, r, "jobs", err)
		return
	}
	// The totals come from the counts kept beside the jobs: a few rows.
	st, err := s.q.Stats(ctx)
	if err != nil {
		s.failRead(w, r, "job counts", err)
		return
	}
	data := jobsPage{Filter: f, States: jobStates, PayloadBound: store.PayloadScanBound}
	for _, state := range jobStates {
		data.Counts = append(data.Counts, stateCount{State: state, N: st.Total[queue.State(state)]})
	}
	for _, j := range js {
		data.Rows = append(data.Rows, s.jobRow(j))
	}
	link := func(before int64) string {
		v := url.Values{}
		for k, x := range map[string]string{"state": f.State, "task": f.Task, "schedule": f.Schedule, "key": f.Key, "payload": f.Payload} {
			if x != "" {
				v.Set(k, x)
			}
		}
		if before > 0 {
			v.Set("before", strconv.FormatInt(before, 10))
		}
		if len(v) == 0 {
			return "/jobs"
		}
		return "/jobs?" + v.Encode()
	}
	if len(js) == JobsPage {
		data.Older = link(js[len(js)-1].ID)
	}
	if before > 0 {
		data.Newest = link(0)
	}
	if (f.Task != "" || f.Schedule != "") && f.Key == "" {
		data.Note = fmt.Sprintf("A filter by task or schedule looks at the newest %d jobs of the walk (of the state, if one is chosen); older matches are not listed.", store.ListScanBound)
	}
	s.render(w, r, http.StatusOK, "jobs", "Jobs", "jobs", data)
}

// jobRow is j as a row of /jobs.
func (s *server) jobRow(j *queue.Job) jobRow {
	loc := s.zone(j.Schedule)
	row := jobRow{ID: j.ID, State: string(j.State), Type: j.Type, Schedule: j.Schedule, Item: j.Item,
		Instant: s.when(j.ScheduledAt, loc), Attempts: fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts),
		Created: s.when(j.CreatedAt, loc), Finished: s.when(j.FinishedAt, loc), Key: j.Key}
	switch {
	case !j.FinishedAt.IsZero():
		row.When, row.WhenWhat = row.Finished, "finished"
	case !j.ScheduledAt.IsZero():
		row.When, row.WhenWhat = row.Instant, "instant"
	default:
		row.When, row.WhenWhat = row.Created, "created"
	}
	if j.State == queue.StateDead || j.State == queue.StateDiscarded {
		row.Error = orDash(firstLine(s.lastError(j), 160))
	}
	return row
}

// alarmRow is one alarm on /alarms or a schedule's page.
type alarmRow struct {
	ID       int64
	Kind     string
	Schedule string
	Item     string
	Instant  When
	JobID    int64
	Open     bool
	Raised   When
	Error    string
	Notified []jobRow // its notification jobs
}

// alarmsPage is the data of /alarms.
type alarmsPage struct {
	Schedule  string
	Incidents []incidentRow // open first, then newest
	Rows      []alarmRow
	More      bool
}

func (s *server) alarms(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := strings.TrimSpace(r.URL.Query().Get("schedule"))
	alarms, err := s.q.Alarms(ctx, name, AlarmsPage)
	if err != nil {
		s.failRead(w, r, "alarms", err)
		return
	}
	data := alarmsPage{Schedule: name, More: len(alarms) == AlarmsPage}
	if data.Incidents, err = s.incidentRows(ctx, name); err != nil {
		s.failRead(w, r, "incidents", err)
		return
	}
	for _, al := range alarms {
		loc := s.zone(al.Schedule)
		row := s.alarmRow(al, loc)
		// One key index range: notification keys start with the alarm's.
		if row.Notified, err = s.notifications(ctx, store.NotifyKeyPrefix+al.Key+"|", loc); err != nil {
			s.failRead(w, r, fmt.Sprintf("notifications of alarm %d", al.ID), err)
			return
		}
		data.Rows = append(data.Rows, row)
	}
	s.render(w, r, http.StatusOK, "alarms", "Alarms", "alarms", data)
}

// notifications reads the notification jobs whose keys start with prefix.
func (s *server) notifications(ctx context.Context, prefix string, loc *time.Location) ([]jobRow, error) {
	js, err := s.q.List(ctx, queue.Filter{KeyPrefix: prefix, Limit: alarmNotifications})
	if err != nil {
		return nil, err
	}
	var rows []jobRow
	for _, j := range js {
		rows = append(rows, jobRow{ID: j.ID, State: string(j.State), Type: j.Type,
			Attempts: fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts), Finished: s.when(j.FinishedAt, loc),
			Error: firstLine(s.lastError(j), 120)})
	}
	return rows, nil
}

func (s *server) alarmRow(al store.Alarm, loc *time.Location) alarmRow {
	return alarmRow{ID: al.ID, Kind: string(al.Kind), Schedule: al.Schedule, Item: al.Item, Instant: s.when(al.ScheduledAt, loc),
		JobID: al.JobID, Open: al.Open, Raised: s.when(al.RaisedAt, loc), Error: firstLine(al.Error, 160)}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
