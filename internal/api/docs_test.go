package api

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsMatchDocument: docs/api.md shows a curl call of every path of
// openapi.json, and every path it calls is in the document.
func TestDocsMatchDocument(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := loadDocument(t)
	paths := doc.Paths.InMatchingOrder()
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	var patterns []*regexp.Regexp
	for _, p := range paths {
		parts := param.Split(p, -1)
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		patterns = append(patterns, regexp.MustCompile("^"+strings.Join(parts, "[^/]+")+"$"))
	}
	called := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$API(/[^\s"'?]*)`).FindAllStringSubmatch(string(b), -1) {
		called[m[1]] = true
	}
	if len(called) == 0 {
		t.Fatal("docs/api.md calls no $API path")
	}
	for path := range called {
		if !slices.ContainsFunc(patterns, func(re *regexp.Regexp) bool { return re.MatchString(path) }) {
			t.Errorf("docs/api.md calls %s, which openapi.json lacks", path)
		}
	}
	for i, p := range paths {
		found := false
		for path := range called {
			if patterns[i].MatchString(path) {
				found = true
			}
		}
		if !found {
			t.Errorf("openapi.json has %s, of which docs/api.md shows no curl call", p)
		}
		for _, op := range doc.Paths.Value(p).Operations() {
			if strings.TrimSpace(op.Summary) == "" {
				t.Errorf("openapi.json: %s has an operation without a summary", p)
			}
		}
	}
}
