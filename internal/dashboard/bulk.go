package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/scheduler-run/scheduler/queue"
)

// The actions on many jobs at once: a selection of the jobs list, retried
// or discarded, and every dead job of a schedule retried.
const (
	ActionRetryJobs   = "retry-jobs"
	ActionDiscardJobs = "discard-jobs"
	ActionRetryDead   = "retry-dead"
)

// refusal is a job an action left as it was, and why.
type refusal struct {
	id  int64
	why string
}

// selection reads the form's job ids: at least one, at most a page.
func selection(action string, form url.Values) ([]int64, error) {
	refs := form["job"]
	if len(refs) == 0 {
		return nil, fmt.Errorf("%s: no job selected: tick the jobs to act on first", action)
	}
	if len(refs) > queue.MaxList {
		return nil, fmt.Errorf("%s: %d jobs selected: at most %d at once", action, len(refs), queue.MaxList)
	}
	var ids []int64
	for _, ref := range refs {
		id, err := strconv.ParseInt(ref, 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("%s: %q is not a job id", action, ref)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// retryJobs retries each job of ids that is dead or discarded, each in a
// transaction of its own.
func (x *Actions) retryJobs(ctx context.Context, ids []int64) (string, error) {
	var done []int64
	var refused []refusal
	q := x.cfg.Queue
	for _, id := range ids {
		err := q.Retry(ctx, id)
		switch {
		case err == nil:
			done = append(done, id)
		case errors.Is(err, queue.ErrNotFound):
			refused = append(refused, refusal{id, x.notDead(ctx, id, "dead or discarded")})
		default:
			return "", fmt.Errorf("retry job %d: %w (retried before it: %s)", id, err, idList(done))
		}
	}
	return outcome("Retried", "made pending with fresh attempts", done, refused), nil
}

// discardJobs discards the dead jobs of ids in one transaction.
func (x *Actions) discardJobs(ctx context.Context, ids []int64, by string) (string, error) {
	d, err := x.cfg.Queue.Discard(ctx, queue.Discard{IDs: ids, By: by})
	if err != nil {
		return "", err
	}
	var refused []refusal
	for _, r := range d.Refused {
		why := fmt.Sprintf("job %d no longer exists", r.ID)
		if r.State != "" {
			why = fmt.Sprintf("job %d is %s, not dead", r.ID, r.State)
		}
		refused = append(refused, refusal{r.ID, why})
	}
	return outcome("Discarded", "no longer counted as dead", d.IDs, refused), nil
}

// retryDead retries every dead job of schedule, up to a list's length per
// press, once the form's confirm box is ticked.
func (x *Actions) retryDead(ctx context.Context, name string, form url.Values) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%s: no schedule given", ActionRetryDead)
	}
	if form.Get("confirm") != "yes" {
		return "", fmt.Errorf("retry the dead jobs of %s: not confirmed: tick the box beside the button", name)
	}
	q := x.cfg.Queue
	dead, err := q.List(ctx, queue.Filter{State: queue.StateDead, Schedule: name, Limit: queue.MaxList})
	if err != nil {
		return "", fmt.Errorf("list the dead jobs of %s: %w", name, err)
	}
	if len(dead) == 0 {
		return fmt.Sprintf("%s has no dead job: nothing to retry.", name), nil
	}
	ids := make([]int64, len(dead))
	for i, j := range dead {
		ids[i] = j.ID
	}
	slices.Sort(ids)
	msg, err := x.retryJobs(ctx, ids)
	if err == nil && len(dead) == queue.MaxList {
		msg += fmt.Sprintf(" %s may have more dead jobs: press again to retry them.", name)
	}
	return msg, err
}

// notDead says why job id could not be retried: its state now.
func (x *Actions) notDead(ctx context.Context, id int64, want string) string {
	j, err := x.cfg.Queue.Job(ctx, id)
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return fmt.Sprintf("job %d no longer exists", id)
	case err != nil:
		return fmt.Sprintf("job %d could not be read: %v", id, err)
	}
	return fmt.Sprintf("job %d is %s, not %s", id, j.State, want)
}

// outcome is the message of a bulk action: how many jobs it acted on,
// which, and each job it left and why.
func outcome(verb, what string, done []int64, refused []refusal) string {
	var b strings.Builder
	switch len(done) {
	case 0:
		fmt.Fprintf(&b, "%s no job.", verb)
	case 1:
		fmt.Fprintf(&b, "%s 1 job (%s): %s.", verb, idList(done), what)
	default:
		fmt.Fprintf(&b, "%s %d jobs (%s): %s.", verb, len(done), idList(done), what)
	}
	if len(refused) > 0 {
		whys := make([]string, len(refused))
		for i, r := range refused {
			whys[i] = r.why
		}
		fmt.Fprintf(&b, " Left %d as they were: %s.", len(refused), strings.Join(whys, "; "))
	}
	return b.String()
}

// idList is ids as "1, 2, 3".
func idList(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ", ")
}

// BulkForm is the jobs list's form for acting on the jobs ticked in it.
type BulkForm struct {
	ID      string // the form's id, which the rows' boxes name
	Actions []Form // its buttons, each posting to its action
	CSRF    string
	Back    string
}

// JobsBulkForm is the jobs list's retry and discard of a selection; nil
// when the session may not act.
func (s Session) JobsBulkForm() *BulkForm {
	if !s.Actions {
		return nil
	}
	return &BulkForm{ID: "bulk", CSRF: s.CSRF, Back: s.Back, Actions: []Form{
		s.form(ActionRetryJobs, "Retry selected", "make the ticked dead or discarded jobs pending again with fresh attempts"),
		s.form(ActionDiscardJobs, "Discard selected", "end the ticked dead jobs as discarded: kept, no longer counted as dead, not run again"),
	}}
}

// RetryDeadForm retries every dead job of schedule name; nil when the
// session may not act.
func (s Session) RetryDeadForm(name string) *Form {
	if !s.Actions {
		return nil
	}
	f := s.form(ActionRetryDead, "Retry all dead jobs", "make every dead job of "+name+" pending again with fresh attempts")
	f.Schedule = name
	return &f
}
