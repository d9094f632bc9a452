package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/alarm"
	"github.com/scheduler-run/scheduler/schedule/config"
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
	Deadline   string // alarm.DeadlineOf's state; "-" when it watches none
	DeadlineAt When   // the deadline the beat watches; zero when none is known
	Strip      []Cell
	Forms      []Form // trigger, pause or resume, when the session may act
	Running    count  // its running jobs, manual ones included, among the newest read
	Dead       count  // its dead jobs, manual ones included, among the newest read
	Open       []openAlarms
	Trouble    string // what is wrong, in words; "" when nothing
	// After is the upstream of a schedule with after, which has no cron
	// and no next runs; Waiting says how many of the jobs of its newest
	// upstream run ended while they have not all ("waiting: 2 of 3
	// ended"), else "".
	After   string
	Waiting string
}

// count is a bounded count of jobs: N, or at least N when More (its read
// was full).
type count struct {
	N    int
	More bool
}

// String is "3", or "1000+" when there may be more.
func (c count) String() string {
	if c.More {
		return fmt.Sprintf("%d+", c.N)
	}
	return strconv.Itoa(c.N)
}

// openAlarms counts a schedule's open alarms of one kind.
type openAlarms struct {
	Kind string
	N    int
}

// liveJobs are the newest running and dead jobs, by schedule, read once
// for a page: two walks of those states' indexes, however many rows.
type liveJobs struct {
	running, dead         map[string][]*queue.Job
	runningFull, deadFull bool // the read hit queue.MaxList: counts are at least
}

// readLive reads the newest queue.MaxList running and dead jobs.
func (s *server) readLive(ctx context.Context) (liveJobs, error) {
	l := liveJobs{running: map[string][]*queue.Job{}, dead: map[string][]*queue.Job{}}
	for _, st := range []struct {
		state queue.State
		into  map[string][]*queue.Job
		full  *bool
	}{{queue.StateRunning, l.running, &l.runningFull}, {queue.StateDead, l.dead, &l.deadFull}} {
		js, err := s.q.List(ctx, queue.Filter{State: st.state, Limit: queue.MaxList})
		if err != nil {
			return l, err
		}
		for _, j := range js {
			if j.Schedule != "" {
				st.into[j.Schedule] = append(st.into[j.Schedule], j)
			}
		}
		*st.full = len(js) == queue.MaxList
	}
	return l, nil
}

// DeadlineClass is the deadline badge's CSS class: dl-on-time, ...
func (r scheduleRow) DeadlineClass() string {
	if r.Deadline == "-" {
		return "dl-none"
	}
	return "dl-" + strings.ReplaceAll(r.Deadline, " ", "-")
}

// setTrouble sets r.Trouble from its dead jobs, open alarms and deadline
// state, most severe first.
func (r *scheduleRow) setTrouble() {
	var parts []string
	if r.Dead.N > 0 {
		parts = append(parts, plural(r.Dead.N, "dead job"))
	}
	for _, o := range r.Open {
		parts = append(parts, fmt.Sprintf("%d open %s", o.N, plural0(o.N, o.Kind+" alarm")))
	}
	if r.Deadline == string(alarm.DeadlineMissed) || r.Deadline == string(alarm.DeadlineLate) {
		parts = append(parts, "deadline "+r.Deadline)
	}
	r.Trouble = strings.Join(parts, ", ")
}

// plural0 is noun, plural unless n is 1.
func plural0(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
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
	live, err := s.readLive(ctx)
	if err != nil {
		s.failRead(w, r, "running and dead jobs", err)
		return
	}
	rows, errs := s.scheduleRows(ctx, cfg, shown, cursors, live)
	sess := s.cfg.SessionFunc(r)
	for i, err := range errs {
		if err != nil {
			s.failRead(w, r, "schedule "+shown[i].Name, err)
			return
		}
		if rows[i].After == "" { // a schedule with after runs only after its upstream
			rows[i].Forms = sess.ScheduleForms(rows[i].Name, rows[i].Paused)
		}
	}
	// Trouble first; the pages still run by name.
	slices.SortStableFunc(rows, func(a, b scheduleRow) int {
		return boolRank(a.Trouble == "") - boolRank(b.Trouble == "")
	})
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
	for _, sc := range slices.Concat(cfg.Schedules, cfg.Followers()) {
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
func (s *server) scheduleRows(ctx context.Context, cfg *config.Config, shown []*config.Schedule, cursors map[string]store.Cursor, live liveJobs) (rows []scheduleRow, errs []error) {
	rows = make([]scheduleRow, len(shown))
	errs = make([]error, len(shown))
	sem := make(chan struct{}, parallelReads)
	var wg sync.WaitGroup
	for i, sc := range shown {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rows[i], _, errs[i] = s.scheduleRow(ctx, cfg, sc, cursors[sc.Name], live)
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

// scheduleRow reads sc's row: its newest jobs, skips and alarms, and its
// running and dead jobs.
func (s *server) scheduleRow(ctx context.Context, cfg *config.Config, sc *config.Schedule, cur store.Cursor, live liveJobs) (scheduleRow, scheduleData, error) {
	row := scheduleRow{Name: sc.Name, Words: describe(sc.Cron), Expr: sc.Cron, Zone: sc.Location.String(), Task: sc.Task,
		Items: len(sc.Items()), Paused: cur.Paused, PausedAt: s.when(cur.PausedAt, sc.Location), Deadline: "-"}
	if err := s.nextOfRow(ctx, cfg, sc, cur, &row); err != nil {
		return row, scheduleData{}, err
	}
	alarms, err := s.q.Alarms(ctx, sc.Name, deadlineAlarms)
	if err != nil {
		return row, scheduleData{}, err
	}
	running, dead := live.running[sc.Name], live.dead[sc.Name]
	row.Running = count{N: len(running), More: live.runningFull && len(running) > 0}
	row.Dead = count{N: len(dead), More: live.deadFull && len(dead) > 0}
	row.Open = openAlarmsOf(alarms)
	h, err := s.history(ctx, sc, alarms, append(running, dead...))
	if err != nil {
		return row, scheduleData{}, err
	}
	if state := alarm.DeadlineOf(sc, alarms, h.lastRun()); state != alarm.DeadlineNone {
		row.Deadline = string(state)
		if s.cfg.DeadlineFunc != nil {
			if at, ok := s.cfg.DeadlineFunc(sc.Name); ok {
				row.DeadlineAt = s.when(at, sc.Location)
			}
		}
	}
	row.setTrouble()
	row.Strip = s.strip(sc, h.instants, "", true)
	return row, scheduleData{history: h, alarms: alarms}, nil
}

// nextOfRow sets row's next runs; for a schedule with after, which has
// none, what it follows and whether it waits.
func (s *server) nextOfRow(ctx context.Context, cfg *config.Config, sc *config.Schedule, cur store.Cursor, row *scheduleRow) error {
	if sc.After != "" {
		row.After, row.Words, row.Items = sc.After, "after "+sc.After, 1
		fs, err := s.q.FanInsOf(ctx, sc.Name, 1)
		if err != nil {
			return err
		}
		if len(fs) == 1 && fs[0].State == store.FanInWaiting {
			row.Waiting = fmt.Sprintf("waiting: %d of %d ended", fs[0].Ended, fs[0].Expected)
		}
		return nil
	}
	next, err := schedule.NextRuns(cfg, sc.Name, nextRuns, schedule.NextOptions{From: s.clock.Now(), Cursor: cur.At})
	if err != nil {
		return err
	}
	for _, n := range next {
		row.Next = append(row.Next, s.when(n.At, sc.Location))
	}
	return nil
}

// openAlarmsOf counts the open alarms among alarms by kind, in the order
// dead, missed, late, misfire.
func openAlarmsOf(alarms []store.Alarm) []openAlarms {
	n := map[store.AlarmKind]int{}
	for _, al := range alarms {
		if al.Open {
			n[al.Kind]++
		}
	}
	var out []openAlarms
	for _, k := range []store.AlarmKind{store.AlarmDead, store.AlarmMissed, store.AlarmLate, store.AlarmMisfire} {
		if n[k] > 0 {
			out = append(out, openAlarms{Kind: string(k), N: n[k]})
		}
	}
	return out
}

// boolRank is 0 for false, 1 for true.
func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
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
	ItemIDs  []string // every item's id, when it fans out
	Runs     []runRow
	Skips    []skipRow
	Alarms   []alarmRow
	Notify   []string
	Catchup  string
	Overlap  string
	Start    string // start_within; "-" when none
	Deadline string // deadline; "-" when none
	Charts   scheduleCharts
	Chain    []chainLink // the schedules after it, and after those
}

func (s *server) schedule(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	cfg := s.cfg.ConfigFunc()
	name := r.PathValue("name")
	sc, ok := cfg.Schedule(name)
	if f, after := cfg.Follower(name); !ok && after {
		s.after(w, r, cfg, f)
		return
	}
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
	live, err := s.readLive(ctx)
	if err != nil {
		s.failRead(w, r, "running and dead jobs", err)
		return
	}
	row, sd, err := s.scheduleRow(ctx, cfg, sc, cursors[sc.Name], live)
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
	if data.Chain, err = s.chain(ctx, cfg, sc); err != nil {
		s.failRead(w, r, "fan-ins", err)
		return
	}
	if one || len(sc.Items()) > 1 {
		for _, it := range sc.Items() {
			data.ItemIDs = append(data.ItemIDs, it.ID)
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
