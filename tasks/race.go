//go:build race

package tasks

// raceBuild reports a binary built with the race detector, whose runtime
// sleeps a second at each exit unless GORACE says otherwise.
const raceBuild = true
