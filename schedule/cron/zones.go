package cron

import (
	_ "embed"
	"slices"
	"strings"
	"sync"

	"github.com/scheduler-run/scheduler/schedule/internal/suggest"
)

// zoneNames lists the IANA zones built into the binary (time/tzdata), one
// per line: the names in $GOROOT/lib/time/zoneinfo.zip, which
// TestZoneNamesMatchTheEmbeddedDatabase keeps in step.
//
//go:embed zones.txt
var zoneNames string

var zoneList = sync.OnceValue(func() []string { return strings.Fields(zoneNames) })

// maxZoneHints bounds the zones a hint offers when several are as close.
const maxZoneHints = 3

// zoneHint suggests the built-in zones nearest to a name that is not one.
// The edits allowed are those of its last element, the city, since zones
// share their regions; a bare city ("istanbul") is also compared with each
// zone's last element.
func zoneHint(name string) string {
	if name == "" {
		return ""
	}
	city := name[strings.LastIndexByte(name, '/')+1:]
	if s := suggest.Within(name, zoneList(), suggest.Typos(city)); len(s) > 0 || city != name {
		return suggest.DidYouMean(s)
	}
	var cities []string
	byCity := map[string][]string{}
	for _, z := range zoneList() {
		city := z[strings.LastIndexByte(z, '/')+1:]
		if byCity[city] == nil {
			cities = append(cities, city)
		}
		byCity[city] = append(byCity[city], z)
	}
	var zones []string
	for _, c := range suggest.Names(name, cities) {
		zones = append(zones, byCity[c]...)
	}
	slices.Sort(zones)
	return suggest.DidYouMean(zones[:min(len(zones), maxZoneHints)])
}
