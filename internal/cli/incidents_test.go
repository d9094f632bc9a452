package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestIncidentCommands: -ack acknowledges an open incident once, refusing
// an unknown id, a resolved incident and a malformed id; -silence needs
// -for and a known schedule, -unsilence lifts it; -status shows the
// incidents, open first, with who acknowledged them and the silences, as
// text and JSON.
func TestIncidentCommands(t *testing.T) {
	t.Parallel()
	dir := setup(t, alarmsConfig)
	ctx := context.Background()
	q, err := engine.Open(ctx, filepath.Join(dir, "scheduler.db"), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	out, err := q.CommitAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{
		{Schedule: "nightly", ScheduledAt: at, Kind: store.AlarmDead, JobID: 1, At: at},
		{Schedule: "nightly", ScheduledAt: at.Add(24 * time.Hour), Kind: store.AlarmDead, JobID: 2, At: at.Add(24 * time.Hour)},
		{Schedule: "plain", ScheduledAt: at, Kind: store.AlarmMissed, JobID: 3, At: at},
	}})
	if err != nil {
		t.Fatal(err)
	}
	open, resolved := out.Occurrences[0].Incident.ID, out.Occurrences[2].Incident.ID
	if _, err := q.CommitAlarms(ctx, store.AlarmBatch{Successes: map[string]time.Time{"plain": at.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	q.Close()

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-ack", "x"}, 2, `-ack "x": want an incident's id`},
		{[]string{"-ack", "99"}, 1, "no incident 99"},
		{[]string{"-ack", itoa(resolved)}, 1, "is resolved: nothing to acknowledge"},
		{[]string{"-silence", "nightly"}, 2, "-silence needs -for"},
		{[]string{"-silence", "nightly", "-for", "0s"}, 2, "-unsilence NAME lifts a silence"},
		{[]string{"-silence", "nigthly", "-for", "2h"}, 2, `no schedule named "nigthly"`},
		{[]string{"-for", "2h"}, 2, "-for goes with -silence"},
	} {
		if _, errs, code := cli(t, dir, tc.args...); code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %s; want %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
	if got := mustCLI(t, dir, "-ack", itoa(open)); !strings.Contains(got, "acknowledged incident "+itoa(open)+" (nightly dead, 2 occurrences") {
		t.Errorf("-ack = %s", got)
	}
	if got := mustCLI(t, dir, "-ack", itoa(open)); !strings.Contains(got, "was already acknowledged by") {
		t.Errorf("-ack again = %s", got)
	}
	if got := mustCLI(t, dir, "-silence", "nightly", "-for", "2h"); !strings.Contains(got, "silenced nightly until") {
		t.Errorf("-silence = %s", got)
	}
	status := mustCLI(t, dir, "-status")
	if !regexp.MustCompile(`(?m)^`+itoa(open)+` +open +nightly +dead +2 +2026-03-01T03:00:00\+01:00 +2026-03-02T03:00:00\+01:00 +\S+@\S+ \(scheduler -ack, pid \d+\) at \S+ +\S+`).MatchString(status) ||
		!regexp.MustCompile(`(?m)^`+itoa(resolved)+` +resolved \S+ +plain +missed +1 `).MatchString(status) ||
		!regexp.MustCompile(`(?m)^nightly +\S+ +\S+@\S+ \(scheduler -silence`).MatchString(status) {
		t.Errorf("-status =\n%s\nwant the open incident acknowledged and silenced, the resolved one, and the silence", status)
	}
	var rep struct {
		Incidents []incidentView `json:"incidents"`
		Silences  []silenceView  `json:"silences"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Incidents) != 2 || rep.Incidents[0].ID != open || rep.Incidents[0].AckedBy == nil || rep.Incidents[0].SilencedUntil == nil ||
		rep.Incidents[1].Open || len(rep.Silences) != 1 {
		t.Errorf("-status -json incidents %+v, silences %+v", rep.Incidents, rep.Silences)
	}
	if got := mustCLI(t, dir, "-unsilence", "nightly"); !strings.Contains(got, "nightly is no longer silenced") {
		t.Errorf("-unsilence = %s", got)
	}
	var un struct {
		Until *string `json:"until"`
		Was   bool    `json:"was_silenced"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-unsilence", "nightly", "-json")), &un); err != nil || un.Until != nil || un.Was {
		t.Errorf("-unsilence -json again = %+v, %v; want not silenced before or after", un, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
