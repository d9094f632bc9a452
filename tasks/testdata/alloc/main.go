// Command alloc allocates the bytes its argument gives, 1MiB at a time,
// touching each page, and prints "not stopped" when it got them all. Tests
// build it without the race detector, whose shadow memory would not start
// under a memory limit, to run it under one.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
)

func main() {
	n, err := strconv.ParseInt(os.Args[1], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var keep [][]byte
	for got := int64(0); got < n; got += 1 << 20 {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	fmt.Printf("allocated %d MiB: not stopped\n", len(keep))
	runtime.KeepAlive(keep)
}
