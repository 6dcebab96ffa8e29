package main

import (
	"os"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// serviceEnv makes the test binary run as the service (main) instead of
// the tests: the soak starts it so, to measure the service's memory apart.
const serviceEnv = "LOCKMARKET_MARKET_SERVICE"

// TestMain reports the tests skipped for want of a real server, a cluster
// or a browser (and fails them under CI=true); with serviceEnv=1 it is the
// service.
func TestMain(m *testing.M) {
	if os.Getenv(serviceEnv) == "1" {
		main()
		os.Exit(0)
	}
	redistest.Main(m)
}
