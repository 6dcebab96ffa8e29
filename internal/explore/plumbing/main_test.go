package plumbing

import (
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
