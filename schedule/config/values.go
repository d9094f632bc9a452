package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/schedule/cron"
)

// duration is a Go duration string such as "90s" or "1h30m"; not negative.
type duration time.Duration

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 90s or 1h30m", b)
	}
	if v < 0 {
		return fmt.Errorf("duration %s is negative", v)
	}
	*d = duration(v)
	return nil
}

// rate is "N/DURATION", N starts per Go duration or bare unit ("10/1m",
// "2/s").
type rate struct {
	starts int
	per    time.Duration
}

func (r *rate) UnmarshalText(b []byte) error {
	bad := fmt.Errorf("%q is not a rate such as 10/1m (10 starts a minute) or 2/s", b)
	n, d, ok := strings.Cut(string(b), "/")
	if !ok {
		return bad
	}
	starts, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil {
		return bad
	}
	d = strings.TrimSpace(d)
	if d == "s" || d == "m" || d == "h" {
		d = "1" + d
	}
	per, err := time.ParseDuration(d)
	if err != nil {
		return bad
	}
	if starts < 1 || per <= 0 {
		return fmt.Errorf("rate %q: want at least 1 start per positive duration", b)
	}
	*r = rate{starts: starts, per: per}
	return nil
}

// size is bytes with an optional unit K, M, G or T (or KiB...), powers of
// 1024 as in systemd's MemoryMax=. Decimal units (MB) are refused, not
// guessed.
type size int64

func (z *size) UnmarshalText(b []byte) error {
	v, err := parseSize(string(b))
	if err != nil {
		return err
	}
	*z = size(v)
	return nil
}

// sizeUnits are a size's units, longest first.
var sizeUnits = []struct {
	suffix string
	shift  uint
}{
	{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40},
	{"K", 10}, {"M", 20}, {"G", 30}, {"T", 40}, {"B", 0},
}

func parseSize(s string) (int64, error) {
	bad := fmt.Errorf("%q is not a size such as 512MiB, 2G or 1048576", s)
	num, shift := s, uint(0)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, shift = strings.TrimSuffix(s, u.suffix), u.shift
			break
		}
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		if strings.HasSuffix(s, "B") && !strings.HasSuffix(s, "iB") {
			return 0, fmt.Errorf("%q: decimal units are ambiguous here; write KiB, MiB, GiB or TiB (powers of 1024)", s)
		}
		return 0, bad
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n << shift, nil
}

// zone is an IANA time zone name.
type zone struct{ loc *time.Location }

func (z *zone) UnmarshalText(b []byte) error {
	loc, err := cron.LoadZone(string(b))
	if err != nil {
		return err
	}
	z.loc = loc
	return nil
}

// cronText is a cron expression, checked in UTC; Schedule binds its zone.
type cronText string

func (c *cronText) UnmarshalText(b []byte) error {
	if _, err := cron.Parse(string(b), time.UTC); err != nil {
		return err
	}
	*c = cronText(b)
	return nil
}
