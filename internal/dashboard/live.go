package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/scheduler-run/scheduler/queue"
)

// liveView is a running job's output so far, as its pool last stored it.
type liveView struct {
	State   string
	Output  string // redacted again as the attempts' output is
	Updated When   // when its pool stored it; zero while none is
	Every   string // how often the pool stores it
}

// liveView reads job j's live output; a job not running has none.
func (s *server) liveView(ctx context.Context, j *queue.Job, loc *time.Location) (*liveView, error) {
	v := &liveView{State: string(j.State), Every: queue.ShortDuration(queue.LiveOutputEvery)}
	if j.State != queue.StateRunning {
		return v, nil
	}
	l, err := s.q.LiveOutput(ctx, j.ID)
	switch {
	case errors.Is(err, queue.ErrNotFound):
		return v, nil
	case err != nil:
		return nil, err
	}
	v.Output = s.cfg.ConfigFunc().Redactor(j.Type).Attempt(j.Payload, l.Output)
	v.Updated = s.when(l.Updated, loc)
	return v, nil
}

// liveOutput is /runs/ID/live: the part of a running job's page that
// live.js replaces every few seconds, its output so far, and the job's
// state, which tells the script to stop once the job ended.
func (s *server) liveOutput(w http.ResponseWriter, r *http.Request) {
	j, ok := s.pathJob(w, r)
	if !ok {
		return
	}
	ctx, id := r.Context(), j.ID
	v, err := s.liveView(ctx, j, s.zone(j.Schedule))
	if err != nil {
		s.failRead(w, r, fmt.Sprintf("output of job %d", id), err)
		return
	}
	var buf bytes.Buffer
	if err := s.live.ExecuteTemplate(&buf, "livebody", v); err != nil {
		s.log.ErrorContext(ctx, "page not rendered", "page", "live", "err", err)
		http.Error(w, "page not rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.Copy(w, &buf)
}
