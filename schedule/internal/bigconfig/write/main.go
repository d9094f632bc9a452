// Command write prints a schedules.toml of -n schedules (see bigconfig).
//
//	go run ./schedule/internal/bigconfig/write -n 100000 > big.toml
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/scheduler-run/scheduler/schedule/internal/bigconfig"
)

func main() {
	n := flag.Int("n", 100000, "schedules")
	flag.Parse()
	if err := bigconfig.Write(os.Stdout, *n); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
