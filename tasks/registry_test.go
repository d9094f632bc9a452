package tasks

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
)

func TestRegistryRegister(t *testing.T) {
	t.Parallel()
	r := NewRegistry(Config{})
	nop := queue.HandlerFunc(func(context.Context, *queue.Job) error { return nil })
	for _, name := range []string{"vacuum", "digest", "backup"} {
		if err := r.Register(name, nop); err != nil {
			t.Fatalf("Register(%q): %v", name, err)
		}
	}
	tests := []struct {
		name    string
		task    string
		handler queue.Handler
		want    string // in the error text
	}{
		{"empty name", "", nop, "name is empty"},
		{"nil handler", "report", nil, "handler is nil"},
		{"duplicate", "digest", nop, `"digest": already registered`},
	}
	for _, tt := range tests {
		if err := r.Register(tt.task, tt.handler); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Register(%q) = %v, want an error containing %q", tt.name, tt.task, err, tt.want)
		}
	}
	if got, want := r.Names(), []string{"backup", "digest", "vacuum"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
}

func TestRegistryHandler(t *testing.T) {
	t.Parallel()
	r := NewRegistry(Config{})
	goHandler := queue.HandlerFunc(func(context.Context, *queue.Job) error { return nil })
	if err := r.Register("digest", goHandler); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		task    string
		spec    Spec
		want    string // "command", "http", "go" or "" for an error
		wantErr string // in the error text
	}{
		{"command", "backup", Spec{Command: []string{"pg_dump", "{{.db}}"}, Env: map[string]string{"A": "b"}, Dir: "/", PermanentExitCodes: []int{2}}, "command", ""},
		{"url", "notify", Spec{URL: "https://hooks.example/x", Method: "PUT", Headers: map[string]string{"A": "b"}}, "http", ""},
		{"go handler", "digest", Spec{}, "go", ""},
		{"both", "backup", Spec{Command: []string{"true"}, URL: "https://hooks.example/x"}, "", `task "backup": command and url are mutually exclusive`},
		{"neither and no go handler", "backup", Spec{}, "", `task "backup": neither command nor url`},
		{"command shadowing a go handler", "digest", Spec{Command: []string{"true"}}, "", "go handler is registered"},
		{"url shadowing a go handler", "digest", Spec{URL: "https://hooks.example/x"}, "", "go handler is registered"},
		{"headers on a command", "backup", Spec{Command: []string{"true"}, Headers: map[string]string{"A": "b"}}, "", "apply only to a url"},
		{"follow redirects on a command", "backup", Spec{Command: []string{"true"}, FollowRedirects: true}, "", "apply only to a url"},
		{"follow redirects on a go handler", "digest", Spec{FollowRedirects: true}, "", "need a command or url"},
		{"env on a url", "notify", Spec{URL: "https://hooks.example/x", Env: map[string]string{"A": "b"}}, "", "apply only to a command"},
		{"env on a go handler", "digest", Spec{Env: map[string]string{"A": "b"}}, "", "need a command or url"},
		{"command with limits", "backup", Spec{Command: []string{"true"}, Limits: Limits{MemoryMax: 1 << 30}}, "command", ""},
		{"limits on a url", "notify", Spec{URL: "https://hooks.example/x", Limits: Limits{OpenFilesMax: 64}}, "", "apply only to a command"},
		{"limits on a go handler", "digest", Spec{Limits: Limits{CPUTimeMax: time.Minute}}, "", "need a command or url"},
		{"empty command", "backup", Spec{Command: []string{}}, "", `task "backup": command is empty`},
		{"bad template", "backup", Spec{Command: []string{"echo", "{{.x"}}, "", `task "backup": command argument 1`},
		{"bad url", "notify", Spec{URL: "hooks.example/x"}, "", `task "notify": url`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := r.Handler(tt.task, tt.spec)
			if tt.want == "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Handler(%q, %+v) = %v, want an error containing %q", tt.task, tt.spec, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Handler(%q, %+v): %v", tt.task, tt.spec, err)
			}
			var got string
			switch h.(type) {
			case *Command:
				got = "command"
			case *HTTP:
				got = "http"
			case queue.HandlerFunc:
				got = "go"
			}
			if got != tt.want {
				t.Errorf("Handler(%q, %+v) is a %T, want %s", tt.task, tt.spec, h, tt.want)
			}
		})
	}
	if _, err := r.Handler("unknown", Spec{}); !errors.Is(err, ErrNoHandler) {
		t.Errorf("Handler(unknown) = %v, want ErrNoHandler", err)
	}
}

func TestRegistryHTTPFollowsRedirectsOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	r := NewRegistry(Config{})
	for _, follow := range []bool{false, true} {
		h, err := r.Handler("notify", Spec{URL: "https://hooks.example/x", FollowRedirects: follow})
		if err != nil {
			t.Fatalf("Handler: %v", err)
		}
		if got := h.(*HTTP).follow; got != follow {
			t.Errorf("Handler(FollowRedirects: %v) follows redirects: %v", follow, got)
		}
	}
}

type thumbnailArgs struct {
	Image string `json:"image"`
	Width int    `json:"width"`
}

func (thumbnailArgs) Kind() string { return "thumbnail" }

// TestRegisterTyped: Register names a typed handler by its arguments' Kind
// or as given, and Handler returns it for a table with neither command nor
// url; the job's payload reaches it decoded, its output is the job's.
func TestRegisterTyped(t *testing.T) {
	t.Parallel()
	r := NewRegistry(Config{})
	fn := queue.WorkFunc[thumbnailArgs](func(ctx context.Context, j *queue.TypedJob[thumbnailArgs]) (string, error) {
		return j.Args.Image + " at " + strconv.Itoa(j.Args.Width), nil
	})
	if err := Register(r, "", fn); err != nil {
		t.Fatal(err)
	}
	if err := Register(r, "other", fn); err == nil || !strings.Contains(err.Error(), `differs from tasks.thumbnailArgs's Kind "thumbnail"`) {
		t.Errorf("Register under another name = %v", err)
	}
	if err := Register[thumbnailArgs](r, "", nil); err == nil {
		t.Error("Register of a nil handler succeeded")
	}
	h, err := r.Handler("thumbnail", Spec{})
	if err != nil {
		t.Fatal(err)
	}
	j := &queue.Job{Type: "thumbnail", Payload: []byte(`{"image":"a.png","width":64}`), Attempt: 1, MaxAttempts: 1}
	if err := h.Work(context.Background(), j); err != nil || string(j.Output()) != "a.png at 64" {
		t.Errorf("Work = %v, output %q; want nil, a.png at 64", err, j.Output())
	}
	if got := r.Names(); !slices.Equal(got, []string{"thumbnail"}) {
		t.Errorf("Names() = %q", got)
	}
}
