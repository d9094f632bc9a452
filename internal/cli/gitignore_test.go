package cli

import (
	"os"
	"path"
	"strings"
	"testing"
)

// TestGitignoreCoversTheDatabaseFiles: a database made in a clone by the
// example (scheduler.db beside schedules.toml) leaves no untracked file
// behind: .gitignore covers the database and every file beside it.
func TestGitignoreCoversTheDatabaseFiles(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "!") {
			patterns = append(patterns, strings.TrimPrefix(line, "/"))
		}
	}
	for _, suffix := range databaseFiles {
		name := "scheduler.db" + suffix
		ignored := false
		for _, p := range patterns {
			if ok, _ := path.Match(p, name); ok {
				ignored = true
			}
		}
		if !ignored {
			t.Errorf(".gitignore does not cover %s (patterns %q)", name, patterns)
		}
	}
}
