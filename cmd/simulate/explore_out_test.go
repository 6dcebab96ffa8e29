package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestExploreOutSaysWhatItWrote: explore -out lists on stderr every file
// it wrote into the directory, as run -out and the gallery do.
func TestExploreOutSaysWhatItWrote(t *testing.T) {
	t.Parallel() // a server or a temporary directory of its own
	b := redistest.Real(t)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"explore", "-redis", "redis://" + b.Addr(), "-recipe", "1", "-first",
		"-out", dir}, &stdout, &stderr)
	if !errors.Is(err, errExploreFound) {
		t.Fatalf("recipe 1: %v\n%s", err, stderr.String())
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("-out wrote %d files (%v)", len(entries), err)
	}
	said := strings.Join(strings.Fields(stderr.String()), " ")
	if !strings.Contains(said, "simulate explore: wrote ") || !strings.Contains(said, " into "+dir) {
		t.Fatalf("stderr does not say what it wrote:\n%s", stderr.String())
	}
	for _, e := range entries {
		if !strings.Contains(said, e.Name()) {
			t.Errorf("stderr does not name %s:\n%s", e.Name(), stderr.String())
		}
	}
}
