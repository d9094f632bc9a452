package config_test

import (
	"fmt"
	"log"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// Load a file, then list the fan-out of a schedule: each of its instants
// makes one job per item, with the item's keys merged over the payload.
func ExampleLoad() {
	cfg, err := config.Load("testdata/schedules.toml")
	if err != nil {
		log.Fatal(err)
	}
	s, _ := cfg.Schedule("nightly-report")
	for _, it := range s.Items() {
		fmt.Printf("item %s: %s\n", it.ID, it.Payload)
	}
	// Output:
	// item customer=acme: {"customer":"acme","format":"pdf"}
	// item customer=globex: {"customer":"globex","format":"pdf"}
}
