package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParse feeds the loader arbitrary files: it must never panic, return a
// Config only without error, and describe every problem with an Error.
// The seed corpus is in testdata/fuzz/FuzzParse; the files of testdata are
// added too.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.toml")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.toml", data)
		if err != nil {
			if cfg != nil {
				t.Fatalf("Parse returned a Config and %v", err)
			}
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("Parse error %v (%T) is not a non-empty Errors", err, err)
			}
			for _, e := range errs {
				if e.Err == nil || e.File != "fuzz.toml" || e.Line < 0 {
					t.Fatalf("malformed Error %+v", e)
				}
				_ = e.Error()
			}
			return
		}
		for _, s := range cfg.Schedules {
			if s.Expr() == nil || len(s.Items()) == 0 || cfg.Tasks[s.Task] == nil {
				t.Fatalf("schedule %q incomplete: %+v", s.Name, s)
			}
			// Now, and past 2037 where zones follow their rules.
			for _, from := range []time.Time{t0, time.Date(2040, 12, 31, 1, 0, 0, 0, time.UTC)} {
				// The next runs and their daylight-saving marks, as the
				// next command computes them.
				at := from
				for range 3 {
					if at = s.Next(at); at.IsZero() {
						break
					}
					s.Expr().DSTMark(at)
				}
				s.Expr().Between(from, from.Add(time.Hour), 100)
			}
		}
	})
}
