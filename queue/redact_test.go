package queue

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer that a logger and a test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRedactFuncMasksBeforeStoring: the RedactFunc of a type masks an
// attempt's output and error before the pool stores and logs them, so
// neither the attempt history, the job's last error nor the log holds the
// secret; the handler got the job's real payload.
func TestRedactFuncMasksBeforeStoring(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			q, _ := newEngineQueue(t, engine)
			var log syncBuffer
			p := newTestPool(t, q, PoolConfig{Logger: slog.New(slog.NewTextHandler(&log, nil))})
			got := make(chan string, 1)
			p.Register("pay", HandlerFunc(func(ctx context.Context, j *Job) error {
				got <- string(j.Payload)
				j.SetOutput([]byte("sending s3cr3t-token\n"))
				return Permanent(errors.New("refused s3cr3t-token"))
			}), TypeConfig{RedactFunc: func(j *Job, s string) string {
				return strings.ReplaceAll(s, "s3cr3t-token", "[redacted]")
			}})
			runPool(t, p)
			mustEnqueue(t, q, NewJob{Type: "pay", Key: "k", Payload: []byte(`{"token":"s3cr3t-token"}`)})
			if payload := waitFor(t, got); !strings.Contains(payload, "s3cr3t-token") {
				t.Errorf("handler got payload %s, want the real token", payload)
			}
			eventually(t, "job dead", func() bool { return mustJob(t, q, "k").State == StateDead })
			j := mustJob(t, q, "k")
			as, err := q.Attempts(context.Background(), j.ID)
			if err != nil || len(as) != 1 {
				t.Fatalf("attempts %v, %v", as, err)
			}
			if as[0].Output != "sending [redacted]\n" || as[0].Error != "permanent: refused [redacted]" || j.LastError != as[0].Error {
				t.Errorf("stored output %q, error %q, last error %q; want the token masked", as[0].Output, as[0].Error, j.LastError)
			}
			eventually(t, "job dead logged", func() bool { return strings.Contains(log.String(), "job dead") })
			if strings.Contains(log.String(), "s3cr3t-token") {
				t.Errorf("the log holds the token:\n%s", log.String())
			}
		})
	}
}
