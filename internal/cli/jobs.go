package cli

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/scheduler-run/scheduler/queue"
)

// listOptions are the flags of -jobs and -skipped.
type listOptions struct {
	jobs     bool
	skipped  bool
	alarms   bool
	skipName string // -skipped NAME: the schedule, given after the flag
	state    string
	task     string
	sched    string
	limit    int
}

// defaultListLimit is how many rows -jobs and -skipped print without -limit.
const defaultListLimit = 50

func (l *listOptions) define(fs *flag.FlagSet) {
	fs.BoolVar(&l.jobs, "jobs", false, "list jobs, newest first; narrow with -state, -task, -schedule and -key")
	fs.BoolVar(&l.skipped, "skipped", false, "list skipped runs, newest instant first: of every schedule, or of the schedule NAME given after it")
	fs.StringVar(&l.state, "state", "", "with -jobs: only jobs in `STATE` (pending, running, done, dead or cancelled)")
	fs.StringVar(&l.task, "task", "", "with -jobs: only jobs of task `NAME`")
	fs.BoolVar(&l.alarms, "alarms", false, "list alarms (late, missed, dead, misfire, recovered), newest first; narrow with -schedule")
	fs.StringVar(&l.sched, "schedule", "", "with -jobs, -skipped or -alarms: only runs of schedule `NAME`")
	fs.IntVar(&l.limit, "limit", defaultListLimit, "with -jobs, -skipped or -alarms: print at most `N` rows (1 to 1000)")
}

// parse parses args into fs, taking the word after -skipped, when it is not
// a flag, as the schedule's name: "-skipped nightly -json".
func (l *listOptions) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if l.skipped && fs.NArg() > 0 && l.skipName == "" {
		l.skipName = fs.Arg(0)
		return fs.Parse(fs.Args()[1:])
	}
	return nil
}

// check rejects filters given without the command they refine.
func (l *listOptions) check(set map[string]bool) error {
	for _, f := range []string{"state", "task"} {
		if set[f] && !set["jobs"] {
			return usagef("-%s goes with -jobs", f)
		}
	}
	if set["schedule"] && !set["jobs"] && !set["skipped"] && !set["alarms"] {
		return usagef("-schedule goes with -jobs, -skipped or -alarms")
	}
	if set["limit"] && !set["jobs"] && !set["skipped"] && !set["alarms"] {
		return usagef("-limit goes with -jobs, -skipped or -alarms")
	}
	if set["key"] && !set["trigger"] && !set["jobs"] {
		return usagef("-key goes with -trigger or -jobs")
	}
	if l.limit < 1 || l.limit > queue.MaxList {
		return usagef("-limit %d: want 1 to %d", l.limit, queue.MaxList)
	}
	if l.state != "" {
		switch queue.State(l.state) {
		case queue.StatePending, queue.StateRunning, queue.StateDone, queue.StateDead, queue.StateCancelled:
		default:
			return usagef("-state %q: want pending, running, done, dead or cancelled", l.state)
		}
	}
	if l.skipName != "" && l.sched != "" && l.skipName != l.sched {
		return usagef("-skipped %s and -schedule %s name different schedules", l.skipName, l.sched)
	}
	if l.skipName != "" {
		l.sched = l.skipName
	}
	return nil
}

// listJobs is -jobs.
func (a *app) listJobs(ctx context.Context) error {
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	o := a.o
	js, err := q.List(ctx, queue.Filter{State: queue.State(o.state), Type: o.task, Schedule: o.sched, KeyPrefix: o.key, Limit: o.limit})
	if err != nil {
		return err
	}
	if a.o.json {
		return writeJSON(a.stdout, jobViews(js, a.cfg))
	}
	if len(js) == 0 {
		fmt.Fprintln(a.stdout, "no jobs match")
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "ID\tSTATE\tTASK\tATTEMPTS\tCREATED\tFINISHED\tKEY\tLAST ERROR\n")
	for _, j := range js {
		fmt.Fprintf(w, "%d\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", j.ID, j.State, j.Type, j.Attempt, j.MaxAttempts,
			rfc3339(j.CreatedAt, time.UTC), rfc3339(j.FinishedAt, time.UTC), j.Key, orDash(firstLine(a.cfg.Redactor(j.Type).Attempt(j.Payload, j.LastError), 60)))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(js) == o.limit {
		fmt.Fprintf(a.stdout, "%d newest shown; more may match (raise -limit, up to %d, or narrow the filters)\n", len(js), queue.MaxList)
	}
	return nil
}
