package cli

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// helpText runs -h and returns each flag's help, by flag name.
func helpText(t *testing.T) map[string]string {
	t.Helper()
	var out, errb strings.Builder
	if err := Run(t.Context(), []string{"-h"}, &out, &errb, nil, Options{}); err != nil {
		t.Fatalf("-h: %v", err)
	}
	help := map[string]string{}
	name := ""
	flagLine := regexp.MustCompile(`^  -([a-z-]+)`)
	for line := range strings.Lines(errb.String()) {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			name = m[1]
			help[name] = line
			continue
		}
		if name != "" {
			help[name] += line
		}
	}
	return help
}

// TestHelpNamesWhatEachFlagGoesWith: -h names, for every flag that refines
// modes (-json, the filters, -key, ...), each mode it goes with, as the
// usage error of one given alone names them.
func TestHelpNamesWhatEachFlagGoesWith(t *testing.T) {
	t.Parallel()
	help := helpText(t)
	for _, c := range slices.Concat(modeCompanions, listCompanions, jsonCompanion) {
		h, ok := help[c.flag]
		if !ok {
			t.Errorf("-h does not list -%s", c.flag)
			continue
		}
		for _, m := range c.modes {
			if !regexp.MustCompile(`-` + m + `\b`).MatchString(h) {
				t.Errorf("-h of -%s does not name -%s, which it goes with:\n%s", c.flag, m, h)
			}
		}
	}
	for _, m := range modeFlags {
		if _, ok := help[m]; !ok {
			t.Errorf("-h does not list the mode -%s", m)
		}
	}
}
