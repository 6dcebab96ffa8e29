package search_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoRedisInDeps: the search layer knows nothing of Redis, nor of the
// explorer above it: nothing it imports, directly or not, is a Redis
// client or a package of this module (its tests, on toy systems, need no
// server either).
func TestNoRedisInDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		if strings.Contains(strings.ToLower(dep), "redis") ||
			(strings.HasPrefix(dep, "github.com/lockmarket/lockmarket/") &&
				dep != "github.com/lockmarket/lockmarket/internal/explore/search") {
			t.Errorf("the search layer depends on %s", dep)
		}
	}
}
