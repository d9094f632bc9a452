package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue"
)

// checkJobRef checks -cancel or -retry: a number is an id and must be
// positive; anything else is a key.
func checkJobRef(flag, ref string) error {
	if ref == "" {
		return nil // not given, or reported as empty
	}
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil && id <= 0 {
		return usagef("-%s %s: want a job id (a positive number) or key", flag, ref)
	}
	return nil
}

// findJob looks up the job -job, -cancel or -retry names, by id or key. A
// key with its instant in another zone is also tried as stored, in UTC.
func (a *app) findJob(ctx context.Context, q *queue.Client, ref string) (*queue.Job, error) {
	j, err := jobByRef(ctx, q, ref)
	if errors.Is(err, queue.ErrNotFound) {
		if key, ok := a.canonicalKey(ref); ok && key != ref {
			j, err = q.JobByKey(ctx, key)
		}
	}
	if errors.Is(err, queue.ErrNotFound) {
		return nil, &noJobError{ref: ref, db: a.dbPath}
	}
	return j, err
}

// jobByRef looks a job up by id when ref is one, else by key.
func jobByRef(ctx context.Context, q *queue.Client, ref string) (*queue.Job, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		j, err := q.Job(ctx, id)
		if !errors.Is(err, queue.ErrNotFound) {
			return j, err
		}
	}
	return q.JobByKey(ctx, ref)
}

// noJobError is a job reference that names no job in the database.
type noJobError struct{ ref, db string }

func (e *noJobError) Error() string {
	return fmt.Sprintf("no job with id or key %q in %s", e.ref, e.db)
}

// canonicalKey rewrites a key "schedule|item|instant" whose instant has
// another offset, or is a wall time in the schedule's zone, into the key
// the beat stores, in UTC. ok is false when ref is no such key.
func (a *app) canonicalKey(ref string) (key string, ok bool) {
	if a.cfg == nil {
		return "", false
	}
	name, _, found := strings.Cut(ref, "|")
	cut := strings.LastIndex(ref, "|")
	if !found || cut <= len(name) {
		return "", false
	}
	s, found := a.cfg.Schedule(name)
	if !found {
		return "", false
	}
	at, err := parseInstant(ref[cut+1:], s.Location)
	if err != nil {
		return "", false
	}
	return ref[:cut+1] + at.UTC().Format(time.RFC3339), true
}

// parseInstant reads RFC 3339, or YYYY-MM-DDTHH:MM[:SS] in loc.
func parseInstant(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an instant", s)
}
