package config

import (
	"reflect"

	"github.com/BurntSushi/toml"
)

// The raw types hold a table's keys undecoded, so that each decodes on
// its own (see loader.decode).
type rawFile struct {
	Scheduler toml.Primitive `toml:"scheduler"`
	Tasks     toml.Primitive `toml:"tasks"`
	Schedule  toml.Primitive `toml:"schedule"`
	HTTP      toml.Primitive `toml:"http"`
	Pools     toml.Primitive `toml:"pools"`
	API       toml.Primitive `toml:"api"`
	Tracing   toml.Primitive `toml:"tracing"`
}

type rawAPI struct {
	Token toml.Primitive `toml:"token"`
}

type rawHTTP struct {
	Listen         toml.Primitive `toml:"listen"`
	Dashboard      toml.Primitive `toml:"dashboard"`
	Actions        toml.Primitive `toml:"actions"`
	TokenHash      toml.Primitive `toml:"token_hash"`
	User           toml.Primitive `toml:"user"`
	Hosts          toml.Primitive `toml:"hosts"`
	TrustedProxies toml.Primitive `toml:"trusted_proxies"`
}

type rawScheduler struct {
	DB               toml.Primitive `toml:"db"`
	Workers          toml.Primitive `toml:"workers"`
	Timezone         toml.Primitive `toml:"timezone"`
	RetainDone       toml.Primitive `toml:"retain_done"`
	MaintenanceEvery toml.Primitive `toml:"maintenance_every"`
	ShutdownGrace    toml.Primitive `toml:"shutdown_grace"`
	MisfireGrace     toml.Primitive `toml:"misfire_grace"`
	Lease            toml.Primitive `toml:"lease"`
	StartWithin      toml.Primitive `toml:"start_within"`
	Deadline         toml.Primitive `toml:"deadline"`
	Notify           toml.Primitive `toml:"notify"`
	Renotify         toml.Primitive `toml:"renotify"`
}

type rawTask struct {
	Command            toml.Primitive `toml:"command"`
	Env                toml.Primitive `toml:"env"`
	Dir                toml.Primitive `toml:"dir"`
	URL                toml.Primitive `toml:"url"`
	Method             toml.Primitive `toml:"method"`
	Headers            toml.Primitive `toml:"headers"`
	FollowRedirects    toml.Primitive `toml:"follow_redirects"`
	Timeout            toml.Primitive `toml:"timeout"`
	MaxAttempts        toml.Primitive `toml:"max_attempts"`
	Backoff            toml.Primitive `toml:"backoff"`
	MaxBackoff         toml.Primitive `toml:"max_backoff"`
	Concurrency        toml.Primitive `toml:"concurrency"`
	PermanentExitCodes toml.Primitive `toml:"permanent_exit_codes"`
	Priority           toml.Primitive `toml:"priority"`
	KillGrace          toml.Primitive `toml:"kill_grace"`
	LogOutput          toml.Primitive `toml:"log_output"`
	MemoryMax          toml.Primitive `toml:"memory_max"`
	CPUTimeMax         toml.Primitive `toml:"cpu_time_max"`
	OpenFilesMax       toml.Primitive `toml:"open_files_max"`
	RetryOverLimit     toml.Primitive `toml:"retry_over_limit"`
	GiveUpAfter        toml.Primitive `toml:"give_up_after"`
	Redact             toml.Primitive `toml:"redact"`
	RedactOutput       toml.Primitive `toml:"redact_output"`
	Version            toml.Primitive `toml:"version"`
	Accepts            toml.Primitive `toml:"accepts"`
	Rate               toml.Primitive `toml:"rate"`
	RateBurst          toml.Primitive `toml:"rate_burst"`
	RateKey            toml.Primitive `toml:"rate_key"`
}

type rawSchedule struct {
	Name         toml.Primitive `toml:"name"`
	Cron         toml.Primitive `toml:"cron"`
	Timezone     toml.Primitive `toml:"timezone"`
	Task         toml.Primitive `toml:"task"`
	Payload      toml.Primitive `toml:"payload"`
	ForEach      toml.Primitive `toml:"for_each"`
	CatchUp      toml.Primitive `toml:"catch_up"`
	CatchUpLimit toml.Primitive `toml:"catch_up_limit"`
	Overlap      toml.Primitive `toml:"overlap"`
	StartWithin  toml.Primitive `toml:"start_within"`
	Deadline     toml.Primitive `toml:"deadline"`
	Notify       toml.Primitive `toml:"notify"`
	After        toml.Primitive `toml:"after"`
	Require      toml.Primitive `toml:"require"`
	Renotify     toml.Primitive `toml:"renotify"`
}

// The keys each table may hold. TOML keys are case-sensitive but the
// decoder is not, so spellings are checked against these.
var (
	schedulerKeys = tomlKeys(rawScheduler{})
	taskKeys      = tomlKeys(rawTask{})
	scheduleKeys  = tomlKeys(rawSchedule{})
	httpKeys      = tomlKeys(rawHTTP{})
	apiKeys       = tomlKeys(rawAPI{})
	fileKeys      = tomlKeys(rawFile{})
	tracingKeys   = tomlKeys(rawTracing{})
)

func tomlKeys(v any) map[string]bool {
	t := reflect.TypeOf(v)
	keys := make(map[string]bool, t.NumField())
	for i := range t.NumField() {
		keys[t.Field(i).Tag.Get("toml")] = true
	}
	return keys
}
