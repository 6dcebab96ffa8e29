package main

import (
	"os"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// asMain, set in the environment, makes the test binary run the program
// itself (main) instead of the tests, so that a test can send a real
// process a signal.
const asMain = "SIMULATE_TEST_AS_MAIN"

// TestMain reports the tests skipped for want of a real server, a cluster
// or a browser (and fails them under CI=true).
func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
		os.Exit(0)
	}
	redistest.Main(m)
}
