package flawed_test

import (
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestMain reports the tests skipped for want of a real server, a cluster
// or a browser (and fails them under CI=true).
func TestMain(m *testing.M) { redistest.Main(m) }
