package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

func TestEscapeWriter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"plain text, newline and tab kept", []string{"a\tb\nc é 😀 \ufffd"}, "a\tb\nc é 😀 \ufffd"},
		{"csi", []string{"\x1b[2Jclear"}, `\x1b[2Jclear`},
		{"osc title", []string{"\x1b]0;title\x07"}, `\x1b]0;title\a`},
		{"carriage return and others", []string{"over\rwrite\b\f\v\x00\x7f"}, `over\rwrite\b\f\v\x00\x7f`},
		{"c1 control", []string{"\u009b2J"}, `\u009b2J`},
		{"invalid utf-8", []string{"a\xffb\x9bc"}, `a\xffb\x9bc`},
		{"character split between writes", []string{"caf\xc3", "\xa9 ok"}, "café ok"},
		{"unfinished at the end", []string{"caf\xc3"}, `caf\xc3`},
		{"split c1 control", []string{"\xc2", "\x9b"}, `\u009b`},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		w := newEscapeWriter(&out)
		for _, s := range tt.writes {
			if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
				t.Errorf("%s: Write(%q) = %d, %v", tt.name, s, n, err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != tt.want {
			t.Errorf("%s: wrote %q, want %q", tt.name, out.String(), tt.want)
		}
	}
}

// TestJobTextShowsControlCharactersEscaped: -job, -jobs and -dead print a
// job's stored output and error with their terminal escapes, bells and
// carriage returns escaped, newlines and tabs kept; -job -json keeps them
// exact.
func TestJobTextShowsControlCharactersEscaped(t *testing.T) {
	t.Parallel()
	const (
		output  = "line one\x1b[2J\x1b]0;title\x07\rover\nline two\tcol\n"
		errText = "exit code 1 \x1b[31mred\x1b[0m\rhidden"
	)
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	q, err := engine.Open(t.Context(), db, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := q.Enqueue(t.Context(), queue.NewJob{Type: "t", Key: "esc", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	now := q.Clock().Now()
	r, err := q.Engine().CommitPoolTx(t.Context(), store.PoolTx{Owner: "node1-pool", Now: now, Claim: &store.Claim{Lease: time.Hour, N: 1, Types: []string{"t"}}})
	if err != nil || len(r.Claimed) != 1 {
		t.Fatalf("claim: %+v, %v", r.Claimed, err)
	}
	res := store.Result{Job: r.Claimed[0], Worker: "node1-pool/w1", Outcome: queue.OutcomeDead, Error: errText, Output: output,
		Started: now, Finished: now.Add(time.Second)}
	if r, err := q.Engine().CommitPoolTx(t.Context(), store.PoolTx{Owner: "node1-pool", Now: now, Results: []store.Result{res}}); err != nil || !r.Fenced[0] {
		t.Fatalf("result: %+v, %v", r, err)
	}
	q.Close()

	config := "[tasks.t]\ncommand = [\"true\"]\n"
	for _, args := range [][]string{{"-job", "esc"}, {"-jobs"}, {"-dead"}} {
		out, errs, code := runInProcess(t, config, append([]string{"-db", db}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		if strings.ContainsAny(out, "\x1b\x07\r") {
			t.Errorf("%v printed a raw ESC, BEL or CR:\n%q", args, out)
		}
		if !strings.Contains(out, `exit code 1 \x1b[31mred\x1b[0m\rhidden`) {
			t.Errorf("%v lacks the escaped error:\n%s", args, out)
		}
	}
	out, _, _ := runInProcess(t, config, "-db", db, "-job", "esc")
	if want := "line one\\x1b[2J\\x1b]0;title\\a\\rover\n    line two\tcol\n"; !strings.Contains(out, want) {
		t.Errorf("-job shows the output as:\n%s\nwant it to contain:\n%s", out, want)
	}

	out, errs, code := runInProcess(t, config, "-db", db, "-job", "esc", "-json")
	if code != 0 {
		t.Fatalf("-job -json: exit %d\n%s", code, errs)
	}
	var v jobView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.ID != e.ID || len(v.Attempts) != 1 || v.Attempts[0].Output != output || v.Attempts[0].Error != errText || v.LastError != errText {
		t.Errorf("-job -json = %+v, want the output and error exact", v)
	}
}
