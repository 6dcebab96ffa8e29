//go:build race

// Package race says whether the race detector is on (see norace.go).
package race

// Enabled is true when the program was built with the race detector
// (go test -race).
const Enabled = true
