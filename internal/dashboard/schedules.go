package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/alarm"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// Deadline states of a schedule (its td.deadline).
const (
	deadlineNone   = "-"
	deadlineOK     = "ok"
	deadlineLate   = "late"
	deadlineMissed = "missed"
)

// scheduleRow is a schedule as the schedules page shows it.
type scheduleRow struct {
	Name       string
	Words      string // the expression in words
	Expr       string
	Zone       string
	Task       string
	Items      int
	Next       []When
	Paused     bool
	PausedAt   When
	Deadline   string // deadlineOK, deadlineLate, deadlineMissed or deadlineNone
	DeadlineAt When   // the deadline the beat watches; zero when none is known
	Strip      []Cell
	Forms      []Form // trigger, pause or resume, when the session may act
}

// SchedulesPage is how many schedules one page of / lists, as the page
// reads each shown schedule's jobs, skips and alarms.
const SchedulesPage = 50

// schedulesFilter is the filter form of /, as given.
type schedulesFilter struct {
	Q     string // a part of the schedule's name
	State string // "paused", "active" or "" for either
	Alarm string // "open": only schedules with an open alarm; "" for any
}

// schedulesPage is the data of /.
type schedulesPage struct {
	Filter schedulesFilter
	Rows   []scheduleRow
	Total  int // how many schedules the filter matches
	First  int // the position of Rows[0] among them, from 1
	Last   int // the position of the last row among them
	States []string
	Next   string // the link to the next page; "" on the last
	Prev   string // the link to the previous page; "" on the first
	Note   string // what the filter cannot see
}

// schedules is /: the matching schedules by name, a page at a time, each
// with its next runs, deadline and strip.
func (s *server) schedules(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	cfg := s.cfg.ConfigFunc()
	q := r.URL.Query()
	f, err := parseSchedulesFilter(q)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	cursors, err := s.q.Cursors(ctx)
	if err != nil {
		s.failRead(w, r, "cursors", err)
		return
	}
	data := schedulesPage{Filter: f, States: []string{"paused", "active"}}
	var alarmed map[string]bool
	if f.Alarm == "open" {
		if alarmed, data.Note, err = s.openAlarmed(ctx); err != nil {
			s.failRead(w, r, "alarms", err)
			return
		}
	}
	// Filter and order need only the config and cursors; only the shown
	// schedules are read further.
	match := matchSchedules(cfg, cursors, f, alarmed)
	shown, lo := schedulesPageOf(match, q.Get("after"), q.Get("before"), q.Has("before"))
	data.setPages(f, match, shown, lo)
	rows, errs := s.scheduleRows(ctx, cfg, shown, cursors)
	sess := s.cfg.SessionFunc(r)
	for i, err := range errs {
		if err != nil {
			s.failRead(w, r, "schedule "+shown[i].Name, err)
			return
		}
		rows[i].Forms = sess.ScheduleForms(rows[i].Name, rows[i].Paused)
	}
	data.Rows = rows
	s.render(w, r, http.StatusOK, "schedules", "Schedules", "schedules", data)
}

// parseSchedulesFilter reads the filter form of / from q.
func parseSchedulesFilter(q url.Values) (schedulesFilter, error) {
	f := schedulesFilter{Q: strings.TrimSpace(q.Get("q")), State: q.Get("state"), Alarm: q.Get("alarm")}
	if f.State != "" && f.State != "paused" && f.State != "active" {
		return f, fmt.Errorf("state %q: want paused or active", f.State)
	}
	if f.Alarm != "" && f.Alarm != "open" {
		return f, fmt.Errorf("alarm %q: want open", f.Alarm)
	}
	return f, nil
}

// openAlarmed returns the schedules with an open alarm among the newest
// alarms, one pass over their primary key, and a note when older ones went
// unseen. OpenAlarms sees older ones, but on PostgreSQL its costly plan is
// JIT-compiled, which a page cannot afford.
func (s *server) openAlarmed(ctx context.Context) (map[string]bool, string, error) {
	als, err := s.q.Alarms(ctx, "", queue.MaxList)
	if err != nil {
		return nil, "", err
	}
	alarmed := map[string]bool{}
	for _, al := range als {
		if al.Open {
			alarmed[al.Schedule] = true
		}
	}
	note := ""
	if len(als) == queue.MaxList {
		note = fmt.Sprintf("The open alarms are looked for among the newest %d alarms; a schedule whose open alarm is older is not listed.", queue.MaxList)
	}
	return alarmed, note, nil
}

// matchSchedules returns cfg's schedules that f matches, by name; a
// non-nil alarmed holds the only names that may match.
func matchSchedules(cfg *config.Config, cursors map[string]store.Cursor, f schedulesFilter, alarmed map[string]bool) []*config.Schedule {
	var match []*config.Schedule
	for _, sc := range cfg.Schedules {
		paused := cursors[sc.Name].Paused
		if (f.Q != "" && !strings.Contains(sc.Name, f.Q)) || (f.State == "paused" && !paused) ||
			(f.State == "active" && paused) || (alarmed != nil && !alarmed[sc.Name]) {
			continue
		}
		match = append(match, sc)
	}
	slices.SortFunc(match, func(a, b *config.Schedule) int { return strings.Compare(a.Name, b.Name) })
	return match
}

// setPages sets the shown page's counts and the links, keeping f, to the
// pages before and after.
func (p *schedulesPage) setPages(f schedulesFilter, match, shown []*config.Schedule, lo int) {
	p.Total, p.First, p.Last = len(match), lo+1, lo+len(shown)
	link := func(key, name string) string {
		v := url.Values{}
		for k, x := range map[string]string{"q": f.Q, "state": f.State, "alarm": f.Alarm, key: name} {
			if x != "" {
				v.Set(k, x)
			}
		}
		if len(v) == 0 {
			return "/"
		}
		return "/?" + v.Encode()
	}
	if hi := lo + len(shown); hi < len(match) && len(shown) > 0 {
		p.Next = link("after", shown[len(shown)-1].Name)
	}
	switch {
	case lo > 0 && len(shown) > 0:
		p.Prev = link("before", shown[0].Name)
	case lo > 0:
		p.Prev = link("", "") // past the last: back to the first page
	}
}

// scheduleRows reads the shown rows a few at a time, on several
// connections, rather than all in turn. errs holds each row's error.
func (s *server) scheduleRows(ctx context.Context, cfg *config.Config, shown []*config.Schedule, cursors map[string]store.Cursor) (rows []scheduleRow, errs []error) {
	rows = make([]scheduleRow, len(shown))
	errs = make([]error, len(shown))
	sem := make(chan struct{}, parallelReads)
	var wg sync.WaitGroup
	for i, sc := range shown {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rows[i], _, errs[i] = s.scheduleRow(ctx, cfg, sc, cursors[sc.Name])
		}()
	}
	wg.Wait()
	return rows, errs
}

// schedulesPageOf returns the page of match, sorted by name, after after
// or before before (else the first), and its first position. A key need
// not name a schedule, so a page stays put when a reload removes one.
func schedulesPageOf(match []*config.Schedule, after, before string, hasBefore bool) ([]*config.Schedule, int) {
	lo := 0
	switch {
	case after != "":
		lo, _ = slices.BinarySearchFunc(match, after, func(sc *config.Schedule, name string) int {
			if sc.Name <= name {
				return -1
			}
			return 1
		})
	case hasBefore:
		hi, _ := slices.BinarySearchFunc(match, before, func(sc *config.Schedule, name string) int {
			return strings.Compare(sc.Name, name)
		})
		lo = max(hi-SchedulesPage, 0)
	}
	return match[lo:min(lo+SchedulesPage, len(match))], lo
}

// parallelReads is how many schedules the page reads at once, as many as
// a SQLite store's reading connections.
const parallelReads = 4

// scheduleRow reads sc's row: its newest jobs, skips and alarms.
func (s *server) scheduleRow(ctx context.Context, cfg *config.Config, sc *config.Schedule, cur store.Cursor) (scheduleRow, scheduleData, error) {
	now := s.clock.Now()
	row := scheduleRow{Name: sc.Name, Words: describe(sc.Cron), Expr: sc.Cron, Zone: sc.Location.String(), Task: sc.Task,
		Items: len(sc.Items()), Paused: cur.Paused, PausedAt: s.when(cur.PausedAt, sc.Location), Deadline: deadlineNone}
	next, err := schedule.NextRuns(cfg, sc.Name, nextRuns, schedule.NextOptions{From: now, Cursor: cur.At})
	if err != nil {
		return row, scheduleData{}, err
	}
	for _, n := range next {
		row.Next = append(row.Next, s.when(n.At, sc.Location))
	}
	alarms, err := s.q.Alarms(ctx, sc.Name, deadlineAlarms)
	if err != nil {
		return row, scheduleData{}, err
	}
	if sc.StartWithin > 0 || sc.Deadline > 0 {
		row.Deadline = deadlineState(alarms)
		if s.cfg.DeadlineFunc != nil {
			if at, ok := s.cfg.DeadlineFunc(sc.Name); ok {
				row.DeadlineAt = s.when(at, sc.Location)
			}
		}
	}
	h, err := s.history(ctx, sc, alarms)
	if err != nil {
		return row, scheduleData{}, err
	}
	row.Strip = s.strip(sc, h.instants, "", true)
	return row, scheduleData{history: h, alarms: alarms}, nil
}

// deadlineState is alarm.DeadlineStateOf of a schedule's newest alarms;
// ok covers on time and recovered.
func deadlineState(alarms []store.Alarm) string {
	switch alarm.DeadlineStateOf(alarms, time.Time{}) {
	case alarm.DeadlineMissed:
		return deadlineMissed
	case alarm.DeadlineLate:
		return deadlineLate
	}
	return deadlineOK
}

// scheduleData is what a schedule's page reads beyond its row.
type scheduleData struct {
	history history
	alarms  []store.Alarm
}

// itemStrip is the strip of one fan-out item.
type itemStrip struct {
	Item  string
	Cells []Cell
}

// runRow is one recent run on a schedule's page.
type runRow struct {
	ID       int64
	Instant  When
	Item     string
	State    string
	Attempts string
	Finished When
	Error    string
}

// skipRow is one recent skip on a schedule's page.
type skipRow struct {
	Instant When
	Item    string
	Reason  string
	Href    string
}

// schedulePage is the data of /schedules/NAME.
type schedulePage struct {
	Row      scheduleRow
	Item     string // the item asked for with ?item=; "" for all
	Items    []itemStrip
	Runs     []runRow
	Skips    []skipRow
	Alarms   []alarmRow
	Notify   []string
	Catchup  string
	Overlap  string
	Start    string // start_within; "-" when none
	Deadline string // deadline; "-" when none
	Charts   scheduleCharts
}

func (s *server) schedule(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	cfg := s.cfg.ConfigFunc()
	name := r.PathValue("name")
	sc, ok := cfg.Schedule(name)
	if !ok {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("no schedule named %q in %s", name, cfg.File))
		return
	}
	item, one := r.URL.Query().Get("item"), r.URL.Query().Has("item")
	if one && !hasItem(sc, item) {
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("schedule %s has no item %q", name, item))
		return
	}
	cursors, err := s.q.Cursors(ctx)
	if err != nil {
		s.failRead(w, r, "cursors", err)
		return
	}
	row, sd, err := s.scheduleRow(ctx, cfg, sc, cursors[sc.Name])
	if err != nil {
		s.failRead(w, r, "schedule "+sc.Name, err)
		return
	}
	row.Forms = s.cfg.SessionFunc(r).ScheduleForms(sc.Name, row.Paused)
	charts, err := s.scheduleCharts(ctx, sc)
	if err != nil {
		s.failRead(w, r, "charts of "+sc.Name, err)
		return
	}
	data := schedulePage{Charts: charts, Row: row, Item: item, Notify: sc.Notify, Catchup: string(sc.CatchUp), Overlap: string(sc.Overlap),
		Start: orNone(sc.StartWithin), Deadline: orNone(sc.Deadline)}
	if one || len(sc.Items()) > 1 {
		for _, it := range sc.Items() {
			if one && it.ID != item {
				continue
			}
			data.Items = append(data.Items, itemStrip{Item: it.ID, Cells: s.strip(sc, sd.history.instants, it.ID, false)})
		}
	}
	for _, j := range sd.history.jobs {
		if len(data.Runs) == scheduleRuns {
			break
		}
		if one && j.Item != item {
			continue
		}
		data.Runs = append(data.Runs, s.runRow(j, sc.Location))
	}
	for _, sk := range sd.history.skips {
		if len(data.Skips) == scheduleRuns {
			break
		}
		if one && sk.Item != item && sk.Item != "" {
			continue
		}
		data.Skips = append(data.Skips, skipRow{Instant: s.when(sk.ScheduledAt, sc.Location), Item: sk.Item,
			Reason: string(sk.Reason), Href: runHref(sc.Name, sk.Item, sk.ScheduledAt)})
	}
	for i, al := range sd.alarms {
		if i == scheduleRuns {
			break
		}
		data.Alarms = append(data.Alarms, s.alarmRow(al, sc.Location))
	}
	s.render(w, r, http.StatusOK, "schedule", "Schedule "+sc.Name, "schedules", data)
}

func (s *server) runRow(j *queue.Job, loc *time.Location) runRow {
	return runRow{ID: j.ID, Instant: s.when(j.ScheduledAt, loc), Item: j.Item, State: string(j.State),
		Attempts: fmt.Sprintf("%d of %d", j.Attempt, j.MaxAttempts), Finished: s.when(j.FinishedAt, loc),
		Error: firstLine(s.lastError(j), 120)}
}

func hasItem(sc *config.Schedule, item string) bool {
	for _, it := range sc.Items() {
		if it.ID == item {
			return true
		}
	}
	return false
}

func orNone(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.String()
}

// lastError is j's last error masked by its task's redaction, again in
// case the task gained it since the error was stored.
func (s *server) lastError(j *queue.Job) string {
	return s.cfg.ConfigFunc().Redactor(j.Type).Attempt(j.Payload, j.LastError)
}

// zone is schedule's configured zone, or UTC.
func (s *server) zone(schedule string) *time.Location {
	if sc, ok := s.cfg.ConfigFunc().Schedule(schedule); ok && sc.Location != nil {
		return sc.Location
	}
	return time.UTC
}
