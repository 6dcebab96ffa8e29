package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestExploreSemaphore: a semaphore's manifest runs one client more than
// its permits by default and checks holders; the limit off by one breaks
// it (exit 1, replayed), and -check mutual_exclusion names it holders
// too. Permits on a mutex exit 2 with one line naming the field.
func TestExploreSemaphore(t *testing.T) {
	t.Parallel() // a server or a temporary directory of its own
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "recipe.json"), []byte(`{"permits": 2, "ops": {
		"acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX"]}], "ok": ["OK"]},
		"release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]}}}`), 0o644)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(),
		[]string{"explore", "-redis", "127.0.0.1:1", "-recipe-dir", dir}, &stdout, &stderr)
	want := `simulate explore: recipe.json: permits: goes with "lock": "semaphore"`
	if !errors.Is(err, output.ErrUsage) || !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("permits on a mutex: err %v, stderr %q; want one line beginning %q",
			err, stderr.String(), want)
	}

	b := redistest.Real(t)
	for _, check := range []string{"", "mutual_exclusion"} {
		stdout.Reset()
		stderr.Reset()
		args := []string{"explore", "-redis", "redis://" + b.Addr(), "-recipe-dir",
			"../../examples/recipes/semaphore/broken", "-first", "-format", "json"}
		if check != "" {
			args = append(args, "-check", check)
		}
		err = run(context.Background(), args, &stdout, &stderr)
		if !errors.Is(err, errExploreFound) {
			t.Fatalf("-check %q: %v\n%s", check, err, stderr.String())
		}
		var doc struct {
			Checked []string `json:"checked"`
			Model   struct {
				Clients int `json:"clients"`
			} `json:"model"`
			Counterexample struct {
				Property   string `json:"property"`
				Reproduced bool   `json:"reproduced"`
			} `json:"counterexample"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatalf("%v: %s", err, stdout.String())
		}
		if doc.Model.Clients != 3 || !slices.Contains(doc.Checked, "holders") ||
			slices.Contains(doc.Checked, "mutual_exclusion") ||
			doc.Counterexample.Property != "holders" || !doc.Counterexample.Reproduced {
			t.Errorf("-check %q: clients %d, checked %v, counterexample %+v", check,
				doc.Model.Clients, doc.Checked, doc.Counterexample)
		}
	}
}
