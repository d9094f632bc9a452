package config

import (
	"testing"
	"text/template"
)

// TestTemplateErrorNull: a null value is its own error, not a missing key.
func TestTemplateErrorNull(t *testing.T) {
	t.Parallel()
	tm := template.Must(template.New("argv[1]").Option("missingkey=error").Parse("{{.customer}}"))
	err := templateError(`item 1 (customer=null) of schedule "a"`, 1, "{{.customer}}", tm, map[string]any{"customer": nil}, nil)
	want := `argument 1 "{{.customer}}": key "customer" of item 1 (customer=null) of schedule "a" is null`
	if err == nil || err.Error() != want {
		t.Errorf("templateError = %v, want %s", err, want)
	}
}
