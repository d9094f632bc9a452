package cli

import (
	"io"
	"runtime/debug"
	"strings"
	"testing"
)

// TestModeFollowsTheFlagsGiven: the mode is the mode flag given, whatever
// its value; an empty or invalid value is a usage error, never the daemon.
func TestModeFollowsTheFlagsGiven(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		mode    string
		wantErr string
	}{
		{"no flags: daemon", nil, "", ""},
		{"trigger", []string{"-trigger", "x"}, "trigger", ""},
		{"cancel", []string{"-cancel", "7"}, "cancel", ""},
		{"cancel by key", []string{"-cancel", "s|customer=acme|2026-11-23T03:00"}, "cancel", ""},
		{"retry by key", []string{"-retry", "s||manual|x"}, "retry", ""},
		{"zero retry", []string{"-retry", "0"}, "", "-retry 0: want a job id"},
		{"empty trigger", []string{"-trigger", ""}, "", "-trigger: empty NAME"},
		{"empty trigger with =", []string{"-trigger="}, "", "-trigger: empty NAME"},
		{"empty next", []string{"-next", ""}, "", "-next: empty NAME"},
		{"empty pause", []string{"-pause", ""}, "", "-pause: empty NAME"},
		{"empty resume", []string{"-resume", ""}, "", "-resume: empty NAME"},
		{"empty retry", []string{"-retry", ""}, "", "-retry: empty ID"},
		{"empty backfill", []string{"-backfill", "", "-from", "2026-01-01T00:00:00Z", "-to", "2026-01-02T00:00:00Z"}, "", "-backfill: empty NAME"},
		{"empty job", []string{"-job", ""}, "", "-job: empty ID or KEY"},
		{"empty backup", []string{"-backup", ""}, "", "-backup: empty PATH"},
		{"zero cancel", []string{"-cancel", "0"}, "", "-cancel 0: want a job id"},
		{"negative cancel", []string{"-cancel", "-3"}, "", "-cancel -3: want a job id"},
		{"empty from", []string{"-backfill", "x", "-from", "", "-to", "2026-01-02T00:00:00Z"}, "", "-from: empty T"},
		{"empty to", []string{"-backfill", "x", "-from", "2026-01-01T00:00:00Z", "-to", ""}, "", "-to: empty T"},
		{"empty key", []string{"-trigger", "x", "-key", ""}, "", "-key: empty KEY"},
		{"empty item", []string{"-trigger", "x", "-item", ""}, "", "-item: empty ITEM"},
		{"empty db", []string{"-db", ""}, "", "-db: empty path"},
		{"empty mode and another mode", []string{"-trigger", "", "-status"}, "", "-trigger: empty NAME"},
		{"zero cancel and another mode", []string{"-cancel", "0", "-status"}, "", "cannot be combined"},
		{"item without trigger", []string{"-item", "a"}, "", "-item goes with -trigger"},
		{"jobs", []string{"-jobs", "-state", "dead", "-key", "x|", "-limit", "7", "-json"}, "jobs", ""},
		{"skipped with a name", []string{"-skipped", "nightly", "-json", "-limit", "3"}, "skipped", ""},
		{"skipped without a name", []string{"-skipped", "-json"}, "skipped", ""},
		{"skipped with two names", []string{"-skipped", "a", "b"}, "", "unexpected argument"},
		{"skipped and another schedule", []string{"-skipped", "a", "-schedule", "b"}, "", "different schedules"},
		{"state without jobs", []string{"-state", "dead"}, "", "-state goes with -jobs"},
		{"unknown state", []string{"-jobs", "-state", "gone"}, "", `-state "gone"`},
		{"limit too high", []string{"-jobs", "-limit", "1001"}, "", "-limit 1001"},
		{"key without trigger or jobs", []string{"-dead", "-key", "x"}, "", "-key goes with -trigger or -jobs"},
		{"http", []string{"-http", "127.0.0.1:9464"}, "", ""},
		{"http without a port", []string{"-http", "127.0.0.1"}, "", `-http: "127.0.0.1" is not host:port`},
		{"empty http", []string{"-http", ""}, "", "-http: empty ADDR"},
		{"http with a mode", []string{"-status", "-http", "127.0.0.1:9464"}, "", "-http goes with the daemon, not -status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || ExitCode(err) != ExitUsage {
					t.Fatalf("parseFlags(%q) = %v (exit %d), want a usage error containing %q", tt.args, err, ExitCode(err), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tt.args, err)
			}
			if o.mode != tt.mode {
				t.Errorf("parseFlags(%q).mode = %q, want %q", tt.args, o.mode, tt.mode)
			}
		})
	}
}

func TestBuildVersion(t *testing.T) {
	t.Parallel()
	vcs := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "scheduler", Version: "(devel)"}}
		for i := 0; i < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	tagged := &debug.BuildInfo{Main: debug.Module{Path: "scheduler", Version: "v1.4.0"}}
	tests := []struct {
		name     string
		override string
		info     *debug.BuildInfo
		ok       bool
		want     string
	}{
		{"ldflags override wins", "v2.0.0-rc1", tagged, true, "v2.0.0-rc1"},
		{"module version", "", tagged, true, "v1.4.0"},
		{"vcs revision", "", vcs("vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-11-30T16:00:00Z", "vcs.modified", "false"), true, "dev-0123456789ab (2026-11-30T16:00:00Z)"},
		{"dirty tree", "", vcs("vcs.revision", "0123456789abcdef0123", "vcs.modified", "true"), true, "dev-0123456789ab-dirty"},
		{"nothing known", "", vcs(), true, "dev"},
		{"no build info", "", nil, false, "dev"},
	}
	for _, tt := range tests {
		if got := buildVersion(tt.override, tt.info, tt.ok); got != tt.want {
			t.Errorf("%s: buildVersion = %q, want %q", tt.name, got, tt.want)
		}
	}
}
