package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestNestingOver(t *testing.T) {
	t.Parallel()
	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	tests := []struct {
		name      string
		src       string
		max       int
		wantLine  int
		wantDepth int
	}{
		{"flat", "a = 1\nb = \"x\"\n", 1, 0, 0},
		{"key is one level", "a = 1\n", 0, 1, 1},
		{"header parts", "x = 1\n[a.b.c]\nd = 1\n", 3, 3, 4},
		{"array of tables header", "[[a.b]]\nc = [1]\n", 4, 0, 0},
		{"quoted header parts", "[\"a.b\".'c.d']\ne = 1\n", 2, 2, 3},
		{"dotted key", "a.b.c.d = 1\n", 3, 1, 4},
		{"nested arrays", "a = " + deep("[", "]", 3) + "\n", 4, 0, 0},
		{"nested arrays over", "a = " + deep("[", "]", 4) + "\n", 4, 1, 5},
		{"inline tables", "a = {b = {c = {d = 1}}}\n", 4, 0, 0},
		{"inline tables over", "a = {b = {c = {d = {e = 1}}}}\n", 4, 1, 5},
		{"dotted key in inline table", "a = {b.c.d = 1}\n", 3, 1, 4},
		{"dotted key after comma", "a = {x = 1, b.c.d = 1}\n", 3, 1, 4},
		{"closed tables do not add up", "a = {b = {c = 1}, d = {e = 1}}\nf = [[1], [2]]\n", 3, 0, 0},
		{"brackets in a basic string", "a = \"[[[[[[{{{{\"\n", 2, 0, 0},
		{"escaped quote in a basic string", `a = "\"[[[[[["` + "\n", 2, 0, 0},
		{"brackets in a literal string", "a = '[[[[[[{{{{'\n", 2, 0, 0},
		{"brackets in a comment", "a = 1 # [[[[[[{{{{\n# [[[[[[[[\n", 2, 0, 0},
		{"brackets in a multi-line string", "a = \"\"\"\n[[[[[[\n{{{{\n\"\"\"\nb = [[[1]]]\n", 3, 5, 4},
		{"brackets in a multi-line literal", "a = '''\n[[[[[[\n'''\n", 2, 0, 0},
		{"multi-line string ending in quotes", "a = \"\"\"x\"\"\"\"\"\nb = [[1]]\n", 2, 2, 3},
		{"escaped delimiter in a multi-line string", "a = \"\"\"\\\"\"\"[[[[\"\"\"\n", 2, 0, 0},
		{"array over lines with comments", "a = [\n  [1], # ]]]\n  [[2]],\n]\n", 3, 3, 4},
		{"header after a multi-line array", "a = [\n1,\n]\n[b.c.d]\n", 2, 4, 3},
		{"quoted key with brackets", "\"[[[[\" = 1\n", 1, 0, 0},
		{"unterminated string ends at the line", "a = \"[[[[\nb = [[1]]\n", 2, 2, 3},
		{"deep", "a = " + strings.Repeat("{b = ", 4000) + "1" + strings.Repeat("}", 4000) + "\n", 32, 1, 33},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			line, depth, _ := nestingOver([]byte(tc.src), tc.max)
			if line != tc.wantLine || depth != tc.wantDepth {
				t.Errorf("nestingOver(%q, %d) = line %d, depth %d; want line %d, depth %d", tc.src, tc.max, line, depth, tc.wantLine, tc.wantDepth)
			}
		})
	}
}

// deepConfig is a valid config whose schedule's payload nests n inline
// tables on line 9.
func deepConfig(n int) string {
	return `[tasks.t]
command = ["true"]

[[schedule]]
name = "s"
cron = "@hourly"
task = "t"

payload = ` + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) + "\n"
}

// TestDeepConfigIsRefusedBeforeDecoding: a config of thousands of nested
// inline tables is refused with its file and line, allocating next to
// nothing, where decoding it would take hundreds of MB.
func TestDeepConfigIsRefusedBeforeDecoding(t *testing.T) {
	// Not parallel: the allocation is measured across the process.
	data := []byte(deepConfig(4000))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cfg, err := Parse("deep.toml", data)
	runtime.ReadMemStats(&after)
	if cfg != nil || !errors.Is(err, ErrTooDeep) {
		t.Fatalf("Parse of a 4000-deep config = %v, %v; want ErrTooDeep", cfg, err)
	}
	if want := "deep.toml:9: config nested too deep: depth 33 in payload, "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("Parse allocated %d bytes to refuse a %d-byte config, want under 1 MiB", got, len(data))
	}

	// Within the bound it loads.
	if _, err := Parse("ok.toml", []byte(deepConfig(MaxDepth-2))); err != nil {
		t.Errorf("Parse of a config at the depth bound: %v", err)
	}
}

// TestLargeConfigIsRefused: Load refuses a file over MaxSize, naming
// it, and reads no more of it than the bound.
func TestLargeConfigIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.toml")
	body := deepConfig(1) + "# " + strings.Repeat("x", MaxSize) + "\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if cfg != nil || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Load of a %d-byte config = %v, %v; want ErrTooLarge", len(body), cfg, err)
	}
	if !strings.HasPrefix(err.Error(), path+": config too large") {
		t.Errorf("error %q does not name the file", err)
	}
	data, err := ReadFile(path)
	if err != nil || len(data) != MaxSize+1 {
		t.Errorf("ReadFile read %d bytes (%v), want %d", len(data), err, MaxSize+1)
	}
	if _, err := Parse("ok.toml", []byte(deepConfig(1)+"# "+strings.Repeat("x", MaxSize-200)+"\n")); err != nil {
		t.Errorf("Parse of a config under the size bound: %v", err)
	}
}
