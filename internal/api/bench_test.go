package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/api"
	"github.com/scheduler-run/scheduler/internal/cli"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

const benchToken = "bench-token-0123456789abcdefghijklmnopqrstuvwxyz"

// BenchmarkStatus compares GET /api/v1/status, through a local HTTP
// server, with scheduler -status -json, the command line's path, on a
// SQLite file of 10,000 jobs and ten schedules.
func BenchmarkStatus(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	conf := "[tasks.report]\ncommand = [\"true\"]\n"
	for i := range 10 {
		conf += fmt.Sprintf("[[schedule]]\nname = \"schedule%d\"\ncron = \"0 3 * * *\"\ntask = \"report\"\n", i)
	}
	conf += "[[api.token]]\nname = \"bench\"\nhash = \"" + config.HashToken(benchToken).String() + "\"\n"
	confPath, dbPath := filepath.Join(dir, "schedules.toml"), filepath.Join(dir, "q.db")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Parse(confPath, []byte(conf))
	if err != nil {
		b.Fatal(err)
	}
	q, err := engine.Open(ctx, dbPath, engine.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	jobs := make([]queue.NewJob, 10000)
	for i := range jobs {
		jobs[i] = queue.NewJob{Key: fmt.Sprintf("bench-%d", i), Type: "report", Schedule: fmt.Sprintf("schedule%d", i%10), RunAt: time.Now().Add(time.Hour)}
	}
	if _, err := q.EnqueueBatch(ctx, jobs); err != nil {
		b.Fatal(err)
	}

	b.Run("api", func(b *testing.B) {
		a, err := api.New(api.Config{Queue: q, ConfigFunc: func() *config.Config { return cfg }})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(a)
		defer srv.Close()
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/status", nil)
		req.Header.Set("Authorization", "Bearer "+benchToken)
		for b.Loop() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
	b.Run("cli", func(b *testing.B) {
		args := []string{"-status", "-json", "-config", confPath, "-db", dbPath}
		for b.Loop() {
			if err := cli.Run(ctx, args, io.Discard, io.Discard, nil, cli.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
