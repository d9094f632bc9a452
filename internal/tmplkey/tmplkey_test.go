package tmplkey

import (
	"slices"
	"testing"
	"text/template"
)

// TestFind: the key a failed template read is found in the
// template's own order, through . and $, and a null value is told apart
// from a missing key.
func TestFind(t *testing.T) {
	t.Parallel()
	data := map[string]any{"customer": nil, "db": map[string]any{"host": "h"}, "list": []any{"a"}, "s": "x"}
	tests := []struct {
		name, tmpl string
		path       []string
		have       []string
		null       bool
	}{
		{"missing", "{{.custmer}}", []string{"custmer"}, []string{"customer", "db", "list", "s"}, false},
		{"null", "--customer={{.customer}}", []string{"customer"}, nil, true},
		{"nested missing", "{{.db.name}}", []string{"db", "name"}, []string{"host"}, false},
		{"first in order", "{{.s}}{{.b}}{{.a}}", []string{"b"}, []string{"customer", "db", "list", "s"}, false},
		{"root inside range", "{{range .list}}{{.}}{{$.gone}}{{end}}", []string{"gone"}, []string{"customer", "db", "list", "s"}, false},
		{"dot inside with is not the data", "{{with .db}}{{.host}}{{end}}", nil, nil, false},
		{"argument of a function", `{{printf "%s" .nope}}`, []string{"nope"}, []string{"customer", "db", "list", "s"}, false},
		{"all present", "{{.s}} {{.db.host}}", nil, nil, false},
		{"into a string", "{{.s.x}}", nil, nil, false},
	}
	for _, tt := range tests {
		tm := template.Must(template.New("a").Option("missingkey=error").Parse(tt.tmpl))
		kp := Find(tm, data)
		if tt.path == nil {
			if kp != nil {
				t.Errorf("%s: Find(%q) = %+v, want none", tt.name, tt.tmpl, *kp)
			}
			continue
		}
		if kp == nil || !slices.Equal(kp.Path, tt.path) || !slices.Equal(kp.Have, tt.have) || kp.Null != tt.null {
			t.Errorf("%s: Find(%q) = %+v, want path %q have %q null %v", tt.name, tt.tmpl, kp, tt.path, tt.have, tt.null)
		}
	}
}
