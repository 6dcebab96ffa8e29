//go:build !race

// Package race says whether the race detector is on, so that a test whose
// search is exhaustive can search a smaller model under it (the detector
// makes every step several times slower; the code paths it watches are
// the same in a smaller model), as the Go standard library's tests do.
package race

// Enabled is true when the program was built with the race detector
// (go test -race).
const Enabled = false
