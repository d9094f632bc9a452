package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// hostileConfig is a broken schedules.toml and what the error must say.
type hostileConfig struct {
	name string
	data []byte
	// want are substrings the error output must contain: the problem, and
	// where the decoder knows it, "hostile.toml:LINE:".
	want []string
}

// goodBase is a valid config the hostile cases break in one place.
const goodBase = `[scheduler]
workers = 2

[tasks.rec]
command = ["{{REC}}", "-file", "{{RECORD}}"]

[[schedule]]
name = "tick"
cron = "@every 1s"
task = "rec"
`

// withSchedule is goodBase plus a [[schedule]] (starting on line 12) with
// the given body lines after its name.
func withSchedule(lines ...string) string {
	return goodBase + "\n[[schedule]]\nname = \"bad\"\n" + strings.Join(lines, "\n") + "\n"
}

// withTask is goodBase plus a task "bad" (starting on line 12) with the
// given lines, and a schedule using it.
func withTask(lines ...string) string {
	return goodBase + "\n[tasks.bad]\n" + strings.Join(lines, "\n") + "\n\n[[schedule]]\nname = \"b\"\ncron = \"@daily\"\ntask = \"bad\"\n"
}

// hostileConfigs returns the corpus. badSchedules sizes the huge case.
func hostileConfigs(badSchedules int) []hostileConfig {
	c := func(name, data string, want ...string) hostileConfig {
		return hostileConfig{name: name, data: []byte(data), want: want}
	}
	garbage := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(r.UintN(256))
	}
	var huge strings.Builder
	huge.WriteString(goodBase)
	for i := range badSchedules {
		fmt.Fprintf(&huge, "\n[[schedule]]\nname = \"s%d\"\ncron = \"61 * * * *\"\ntask = \"rec\"\n", i)
	}
	return []hostileConfig{
		// Syntax.
		c("unclosed-table-header", "[tasks.rec\ncommand = [\n", "hostile.toml:2:", "table name"),
		c("unterminated-string", "[tasks.rec]\ncommand = [\"true]\n", "hostile.toml:2:", "strings cannot contain newlines"),
		c("unclosed-array", goodBase+"[tasks.x]\ncommand = [\"a\",\n", "unexpected EOF"),
		c("duplicate-key", "[tasks.rec]\ncommand = [\"a\"]\ncommand = [\"b\"]\n", "hostile.toml:3:", "already been defined"),
		c("table-defined-twice", goodBase+"\n[scheduler]\nworkers = 3\n", "hostile.toml:12:", "already been defined"),
		c("binary-garbage", string(garbage), "hostile.toml:1:"),
		c("nul-byte", "[tasks.rec]\ncommand = [\"tr\x00ue\"]\n", "hostile.toml:2:", "control characters"),
		c("invalid-utf8", "[tasks.rec]\ncommand = [\"tr\xffue\"]\n", "hostile.toml:2:", "UTF-8"),
		c("deep-nesting", withSchedule(`cron = "@daily"`, `task = "rec"`, "payload = { x = "+strings.Repeat("[", 100000)+strings.Repeat("]", 100000)+" }"),
			"hostile.toml:16:", "payload", "depth"),
		// Unknown keys, wrong types.
		c("unknown-top-level-key", "bogus = 1\n"+goodBase, "hostile.toml:1:", `unknown key "bogus"`),
		c("unknown-scheduler-key", strings.Replace(goodBase, "workers = 2", "workerz = 2", 1), "hostile.toml:2:", `unknown key "workerz"`),
		c("unknown-task-key", withTask(`command = ["true"]`, `timeuot = "1s"`), "hostile.toml:14:", `unknown key "timeuot"`),
		c("unknown-schedule-key", withSchedule(`cron = "@daily"`, `task = "rec"`, `cron_tz = "UTC"`), "hostile.toml:16:", `unknown key "cron_tz"`),
		c("key-in-wrong-case", withSchedule(`Cron = "@daily"`, `task = "rec"`), "hostile.toml:14:", `unknown key "Cron"`),
		c("schedule-not-an-array", strings.Replace(goodBase, "[[schedule]]", "[schedule]", 1), "schedule"),
		c("tasks-not-a-table", "tasks = 5\n", "tasks", "table"),
		c("workers-wrong-type", strings.Replace(goodBase, "workers = 2", `workers = "eight"`, 1), "hostile.toml:2:", "field workers", "integer"),
		c("workers-negative", strings.Replace(goodBase, "workers = 2", "workers = -1", 1), "hostile.toml:2:", "field workers"),
		c("payload-not-a-table", withSchedule(`cron = "@daily"`, `task = "rec"`, `payload = "x"`), "hostile.toml:16:", "field payload"),
		c("for-each-not-an-array", withSchedule(`cron = "@daily"`, `task = "rec"`, `for_each = { a = 1 }`), "hostile.toml:16:", "field for_each"),
		// Cron.
		c("cron-out-of-range", withSchedule(`cron = "61 * * * *"`, `task = "rec"`), "hostile.toml:14:", "field cron", "61"),
		c("cron-too-few-fields", withSchedule(`cron = "* * *"`, `task = "rec"`), "hostile.toml:14:", "field cron"),
		c("cron-words", withSchedule(`cron = "every tuesday"`, `task = "rec"`), "hostile.toml:14:", "field cron"),
		c("cron-huge", withSchedule(`cron = "`+strings.Repeat("1,", 500000)+`99 * * * *"`, `task = "rec"`), "hostile.toml:14:", "field cron"),
		c("every-below-a-second", withSchedule(`cron = "@every 1ns"`, `task = "rec"`), "hostile.toml:14:", "field cron", "at least 1s"),
		c("every-zero", withSchedule(`cron = "@every 0s"`, `task = "rec"`), "hostile.toml:14:", "field cron"),
		c("impossible-date-feb-31", withSchedule(`cron = "0 0 31 2 *"`, `task = "rec"`), "hostile.toml:14:", "field cron", "never"),
		c("impossible-date-apr-31-seconds", withSchedule(`cron = "0 0 0 31 4 *"`, `task = "rec"`), "hostile.toml:14:", "field cron", "never"),
		c("cron-tz-and-timezone", withSchedule(`cron = "CRON_TZ=Europe/Paris 0 3 * * *"`, `timezone = "UTC"`, `task = "rec"`), "hostile.toml:15:", "field timezone"),
		// Zones.
		c("unknown-zone", withSchedule(`cron = "@daily"`, `timezone = "Mars/Olympus"`, `task = "rec"`), "hostile.toml:15:", "Mars/Olympus"),
		c("unknown-default-zone", strings.Replace(goodBase, "workers = 2", `timezone = "Local/Nowhere"`, 1), "hostile.toml:2:", "Local/Nowhere"),
		c("zone-path-traversal", withSchedule(`cron = "@daily"`, `timezone = "../../../../etc/passwd"`, `task = "rec"`), "hostile.toml:15:", "field timezone"),
		c("cron-tz-unknown", withSchedule(`cron = "CRON_TZ=Nowhere/City 0 3 * * *"`, `task = "rec"`), "hostile.toml:14:", "Nowhere/City"),
		// References, policies, numbers.
		c("undefined-task", withSchedule(`cron = "@daily"`, `task = "nope"`), "hostile.toml:15:", "nope"),
		c("duplicate-schedule-name", goodBase+"\n[[schedule]]\nname = \"tick\"\ncron = \"@daily\"\ntask = \"rec\"\n", "hostile.toml:13:", "already defined"),
		c("empty-for-each-item", withSchedule(`cron = "@daily"`, `task = "rec"`, `for_each = [ {} ]`), "hostile.toml:16:", "item 1 is empty"),
		c("bad-catch-up", withSchedule(`cron = "@daily"`, `task = "rec"`, `catch_up = "sometimes"`), "hostile.toml:16:", "catch_up"),
		c("catch-up-limit-huge", withSchedule(`cron = "@daily"`, `task = "rec"`, `catch_up = "all"`, `catch_up_limit = 100000000`), "hostile.toml:17:", "catch_up_limit"),
		c("bad-overlap", withSchedule(`cron = "@daily"`, `task = "rec"`, `overlap = "maybe"`), "hostile.toml:16:", "overlap"),
		c("duration-in-words", withTask(`command = ["true"]`, `timeout = "5 minutes"`), "hostile.toml:14:", "field timeout"),
		c("duration-negative", withTask(`command = ["true"]`, `backoff = "-1s"`), "hostile.toml:14:", "field backoff", "negative"),
		c("max-attempts-zero", withTask(`command = ["true"]`, `max_attempts = 0`), "hostile.toml:14:", "max_attempts"),
		c("max-attempts-overflow", withTask(`command = ["true"]`, `max_attempts = 99999999999999999999`), "hostile.toml:14:"),
		c("permanent-exit-code-256", withTask(`command = ["true"]`, `permanent_exit_codes = [256]`), "256"),
		// Commands.
		c("empty-command", withTask(`command = []`), "hostile.toml:13:", "command"),
		c("template-unclosed", withTask(`command = ["echo", "{{.x"]`), "hostile.toml:13:", "unclosed action"),
		c("template-unknown-function", withTask(`command = ["echo", "{{exec .x}}"]`), "hostile.toml:13:", `"exec" not defined`),
		c("reserved-env", withTask(`command = ["true"]`, `env = { SCHEDULER_KEY = "forged" }`), "SCHEDULER_KEY", "reserved"),
		c("command-and-url", withTask(`command = ["true"]`, `url = "http://127.0.0.1:9/"`), "hostile.toml:14:", "not both"),
		c("url-not-http", withTask(`url = "file:///etc/passwd"`), "url"),
		// Injection: a newline and a table header inside a string stay in
		// the string, and a name cannot carry them.
		c("newline-table-injection-in-name", withSchedule(`cron = "@daily"`, `task = "rec"`)+
			"\n[[schedule]]\nname = \"x\\n[scheduler]\\nworkers = 1000\"\ncron = \"@daily\"\ntask = \"rec\"\n", "hostile.toml:18:", "field name"),
		c("multiline-string-injection-in-name", goodBase+"\n[[schedule]]\nname = \"\"\"\nx\n[tasks.evil]\ncommand = [\"touch\", \"pwned\"]\n\"\"\"\ncron = \"@daily\"\ntask = \"rec\"\n",
			"hostile.toml:13:", "field name"),
		c("injection-in-task-name", goodBase+"\n[tasks.\"a\\n[scheduler]\"]\ncommand = [\"true\"]\n", "hostile.toml:12:", "task"),
		// Size.
		// The loader reports the first 100 problems and a line saying it
		// stopped, rather than spending seconds per thousand errors.
		{name: "huge-file-many-errors", data: []byte(huge.String()), want: []string{"more than 100 problems", "field cron", "too many problems"}},
	}
}
