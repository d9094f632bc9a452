package config

import (
	"testing"
)

// TestAfterChainsAndSeveral: a chain of after and two schedules after one
// load, each recorded under the schedule it follows in file order, and
// Followers lists each after the one it follows.
func TestAfterChainsAndSeveral(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("t.toml", []byte(`
[tasks.t]
[[schedule]]
name = "c"
after = "b"
task = "t"
[[schedule]]
name = "a"
cron = "@daily"
task = "t"
[[schedule]]
name = "b"
after = "a"
require = "done"
task = "t"
[[schedule]]
name = "e"
after = "a"
task = "t"
`))
	if err != nil {
		t.Fatal(err)
	}
	names := func(ss []*Schedule) string {
		var out string
		for _, s := range ss {
			out += s.Name + " "
		}
		return out
	}
	if got, want := names(cfg.Downstream["a"]), "b e "; got != want {
		t.Errorf("Downstream[a] = %q, want %q", got, want)
	}
	if got, want := names(cfg.Downstream["b"]), "c "; got != want {
		t.Errorf("Downstream[b] = %q, want %q", got, want)
	}
	if got, want := names(cfg.Followers()), "b c e "; got != want {
		t.Errorf("Followers() = %q, want %q", got, want)
	}
	if s, ok := cfg.Follower("c"); !ok || s.After != "b" {
		t.Errorf("Follower(c) = %v, %v", s, ok)
	}
	if o := cfg.Origin(cfg.Downstream["b"][0]); o == nil || o.Name != "a" || cfg.Downstream["b"][0].Location != o.Location {
		t.Errorf("Origin(c) = %v; want a, whose zone c shows its instants in", o)
	}
	if _, ok := cfg.Schedule("c"); ok {
		t.Errorf("Schedule(c) found a schedule with after: the beat would tick it")
	}
}
