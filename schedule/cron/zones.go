package cron

import (
	_ "embed"
	"slices"
	"strings"
	"sync"

	"github.com/scheduler-run/scheduler/schedule/internal/suggest"
)

// zoneNames lists the zones of time/tzdata, one per line; a test keeps it
// in step with $GOROOT/lib/time/zoneinfo.zip.
//
//go:embed zones.txt
var zoneNames string

var zoneList = sync.OnceValue(func() []string { return strings.Fields(zoneNames) })

// maxZoneHints bounds the zones a hint offers when several are as close.
const maxZoneHints = 3

// zoneHint suggests the zones nearest to an unknown name. Typos are
// allowed in the city only, since zones share regions; a bare city
// ("istanbul") is compared with each zone's city.
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
