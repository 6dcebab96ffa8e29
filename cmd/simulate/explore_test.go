package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

func TestExploreFlags(t *testing.T) {
	lua := "../../examples/recipes/correct/"
	for _, tc := range []struct {
		name string
		args []string
		bad  string // part of the usage message; "" for valid flags
	}{
		{"recipe", []string{"-recipe", "4", "-fixed", "-clients", "3", "-faults", "pause-long,crash", "-bound", "faults=2,ticks=2"}, ""},
		{"lua", []string{"-acquire", lua + "acquire.lua", "-release", lua + "release.lua", "-format", "json"}, ""},
		{"no target", nil, "exactly one target"},
		{"two targets", []string{"-recipe", "1", "-watchdog"}, "exactly one target"},
		{"unknown recipe", []string{"-recipe", "7"}, `-recipe "7"`},
		{"fixed alone", []string{"-watchdog", "-fixed"}, "-fixed goes with -recipe"},
		{"too many clients", []string{"-recipe", "1", "-clients", "5"}, "clients 5"},
		{"unknown fault", []string{"-recipe", "1", "-faults", "meteor"}, `unknown fault "meteor"`},
		{"bad bound", []string{"-recipe", "1", "-bound", "depth=3"}, `unknown bound "depth"`},
		{"short ttl", []string{"-recipe", "1", "-ttl", "10ms"}, "ttl 10ms"},
		{"unknown property", []string{"-recipe", "1", "-check", "speed"}, `unknown property "speed"`},
		{"missing file", []string{"-acquire", "nope.lua", "-release", "nope.lua"}, "nope.lua"},
		{"unknown mode", []string{"-recipe", "1", "-mode", "smart"}, `-mode "smart"`},
		{"strategy", []string{"-strategy", "coarse", "-fencing", "-clients", "2"}, ""},
		{"unknown strategy", []string{"-strategy", "finest"}, `-strategy "finest"`},
		{"strategy and recipe", []string{"-strategy", "fine", "-recipe", "6"}, "exactly one target"},
		{"fencing alone", []string{"-recipe", "6", "-fencing"}, "-fencing goes with -strategy"},
		{"watchdog fenced", []string{"-watchdog", "-fencing", "-faults", "pause-long"}, ""},
		{"redlock", []string{"-redlock", "-nodes", "5", "-faults", "node-restart,clock-jump,crash", "-jump", "5s"}, ""},
		{"redlock and watchdog", []string{"-redlock", "-watchdog"}, "exactly one target"},
		{"nodes alone", []string{"-recipe", "1", "-nodes", "3"}, "-nodes goes with -redlock"},
		{"too many nodes", []string{"-redlock", "-nodes", "8"}, "-nodes 8"},
		{"node fault on one server", []string{"-recipe", "1", "-faults", "node-restart"}, "go with -redlock"},
		{"jump without clock jumps", []string{"-redlock", "-jump", "1s"}, "-jump goes with -faults clock-jump"},
		{"negative jump", []string{"-redlock", "-faults", "clock-jump", "-jump", "-1s"}, "clock jump -1s"},
		{"budget", []string{"-recipe", "1", "-budget", "20s"}, ""},
		{"negative budget", []string{"-recipe", "1", "-budget", "-1s"}, "-budget -1s"},
		{"long ttl", []string{"-recipe", "1", "-ttl", "11m"}, "ttl 11m0s"},
		{"recipe dir", []string{"-recipe-dir", "../../examples/recipes/rw-leases/broken", "-ttls", "10s,3s",
			"-renew-every", "2s"}, ""},
		{"recipe dir and recipe", []string{"-recipe-dir", "../../examples/recipes/correct", "-recipe", "1"}, "exactly one target"},
		{"no manifest", []string{"-recipe-dir", "."}, "recipe.json: no recipe.json in ."},
		{"bad ttls", []string{"-recipe", "1", "-ttls", "10s,soon"}, `-ttls "10s,soon"`},
		{"short lease in ttls", []string{"-recipe", "1", "-ttls", "10s,10ms"}, "ttls: lease 10ms"},
		{"negative renewal", []string{"-recipe", "1", "-renew-every", "-1s"}, "renew every -1s"},
		{"bounded delay", []string{"-watchdog", "-max-delay", "100ms"}, ""},
		{"negative delay", []string{"-watchdog", "-max-delay", "-1s"}, "-max-delay -1s"},
		{"tiny delay", []string{"-watchdog", "-max-delay", "1us"}, "-max-delay 1µs"},
		{"part of a millisecond", []string{"-watchdog", "-max-delay", "1500us"}, "-max-delay 1.5ms"},
		{"long delay", []string{"-watchdog", "-max-delay", "11m"}, "-max-delay 11m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := parseExploreFlags(tc.args, &stderr)
			if tc.bad == "" {
				if err != nil {
					t.Fatalf("%v: %s", err, stderr.String())
				}
				return
			}
			if !errors.Is(err, output.ErrUsage) || !strings.Contains(stderr.String(), tc.bad) {
				t.Fatalf("err %v, stderr %q; want usage error mentioning %q", err, stderr.String(), tc.bad)
			}
		})
	}
}

// TestExploreExitStatus: a violation is an error (exit 1) with the JSON
// document written; a clean run is none (exit 0); a script that does not
// parse is a usage error (exit 2).
func TestExploreExitStatus(t *testing.T) {
	t.Parallel() // a server or a temporary directory of its own
	b := redistest.Real(t)
	url := "redis://" + b.Addr()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"explore", "-redis", url, "-recipe", "1", "-first", "-format", "json"}, &stdout, &stderr)
	if !errors.Is(err, errExploreFound) {
		t.Fatalf("recipe 1: %v\n%s", err, stderr.String())
	}
	var doc struct {
		Schedules  int  `json:"schedules"`
		Exhaustive bool `json:"exhaustive"`
		Model      struct {
			Clients int `json:"clients"`
		} `json:"model"`
		Violations []struct {
			Property string `json:"property"`
		} `json:"violations"`
		Counterexample struct {
			Steps      []json.RawMessage `json:"steps"`
			Reproduced bool              `json:"reproduced"`
		} `json:"counterexample"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if doc.Schedules == 0 || doc.Model.Clients != 2 || len(doc.Violations) != 1 ||
		doc.Violations[0].Property != "mutual_exclusion" || !doc.Counterexample.Reproduced || len(doc.Counterexample.Steps) == 0 {
		t.Errorf("document: %s", stdout.String())
	}

	stdout.Reset()
	err = run(context.Background(), []string{"explore", "-redis", url, "-recipe", "2", "-fixed", "-faults", "crash"}, &stdout, &stderr)
	if err != nil || !strings.Contains(stdout.String(), "No violation") {
		t.Errorf("recipe 2 fixed: %v\n%s", err, stdout.String())
	}

	bad := filepath.Join(t.TempDir(), "bad.lua")
	os.WriteFile(bad, []byte("return redis.call("), 0o644)
	rel := "../../examples/recipes/correct/release.lua"
	stderr.Reset()
	err = run(context.Background(), []string{"explore", "-redis", url, "-acquire", bad, "-release", rel}, &stdout, &stderr)
	if !errors.Is(err, output.ErrUsage) || !strings.Contains(stderr.String(), "bad Lua script") {
		t.Errorf("bad script: %v, %q", err, stderr.String())
	}
}

// TestExploreManifestError: a manifest that cannot be used exits 2 with
// one line naming the field, and no usage hint, before any server is reached; a command no
// step may send (one the server does not know, here) names its field too.
func TestExploreManifestError(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "recipe.json"), []byte(`{"ops": {
		"acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "PX", "${ttl}"]}], "ok": ["OK"]},
		"release": {"steps": [{"cmd": ["GET", "${lock}"], "save": "v"},
			{"cmd": ["DEL", "${lock}"], "if": {"eq": ["${v}", "${tokn}"]}}], "ok": [1]}}}`), 0o644)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"explore", "-redis", "127.0.0.1:1", "-recipe-dir", dir}, &stdout, &stderr)
	want := "simulate explore: recipe.json: ops.release.steps[1].if: unknown placeholder ${tokn}"
	if !errors.Is(err, output.ErrUsage) || !strings.HasPrefix(stderr.String(), want) ||
		strings.Count(stderr.String(), "\n") != 1 || strings.Contains(stderr.String(), "for usage") {
		t.Errorf("err %v, stderr %q; want a usage error, one line beginning %q and no usage hint", err, stderr.String(), want)
	}
	b := redistest.Real(t)
	os.WriteFile(filepath.Join(dir, "recipe.json"), []byte(`{"ops": {
		"acquire": {"steps": [{"cmd": ["SETNXX", "${lock}", "${token}"]}], "ok": [1]},
		"release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]}}}`), 0o644)
	stderr.Reset()
	err = run(context.Background(), []string{"explore", "-redis", "redis://" + b.Addr(), "-recipe-dir", dir}, &stdout, &stderr)
	if !errors.Is(err, output.ErrUsage) || !strings.Contains(stderr.String(), "recipe.json: ops.acquire.steps[0].cmd[0]: SETNXX") {
		t.Errorf("an unknown command: err %v, stderr %q", err, stderr.String())
	}
}

// TestExploreStrategy: the fine lock without fencing sells a listing
// twice under a pause past its lease (exit 1); fenced, every schedule of
// two buyers keeps the market's invariants (exit 0).
func TestExploreStrategy(t *testing.T) {
	t.Parallel() // a server or a temporary directory of its own
	b := redistest.Real(t)
	url := "redis://" + b.Addr()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"explore", "-redis", url, "-strategy", "fine", "-first"}, &stdout, &stderr)
	if !errors.Is(err, errExploreFound) || !strings.Contains(stdout.String(), "sold twice") ||
		!strings.Contains(stdout.String(), "reproduced on redis-server") {
		t.Fatalf("fine: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	for line := range strings.SplitSeq(stdout.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > output.Width {
			t.Errorf("a line of %d columns, over %d: %q", n, output.Width, line)
		}
	}
	stdout.Reset()
	err = run(context.Background(), []string{"explore", "-redis", url, "-strategy", "fine", "-fencing", "-clients", "2",
		"-faults", "pause-long", "-bound", "ticks=1"}, &stdout, &stderr)
	if err != nil || !strings.Contains(stdout.String(), "No violation") || !strings.Contains(stdout.String(), "every schedule searched: yes") {
		t.Errorf("fine fenced: %v\n%s", err, stdout.String())
	}
}

// TestExploreRedlock: Redlock breaks mutual exclusion when a node restarts
// empty (exit 1, the counterexample holds the restart and replays), and
// keeps it without node faults (exit 0, every schedule: on one node, for
// a test of seconds).
func TestExploreRedlock(t *testing.T) {
	b := redistest.Real(t)
	url := "redis://" + b.Addr()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"explore", "-redis", url, "-redlock", "-faults", "node-restart", "-first",
		"-format", "json"}, &stdout, &stderr)
	if !errors.Is(err, errExploreFound) {
		t.Fatalf("redlock, node-restart: %v\n%s", err, stderr.String())
	}
	var doc struct {
		Model struct {
			Nodes  int      `json:"nodes"`
			Faults []string `json:"faults"`
		} `json:"model"`
		Violations []struct {
			Property string `json:"property"`
		} `json:"violations"`
		Counterexample struct {
			Actions []struct {
				Kind string `json:"kind"`
				Node string `json:"node"`
			} `json:"actions"`
			Reproduced bool `json:"reproduced"`
		} `json:"counterexample"`
		Note string `json:"note"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	restarts := 0
	for _, a := range doc.Counterexample.Actions {
		if a.Kind == "restart" && a.Node != "" {
			restarts++
		}
	}
	if doc.Model.Nodes != 3 || len(doc.Model.Faults) != 1 || doc.Model.Faults[0] != "node-restart" ||
		len(doc.Violations) != 1 || doc.Violations[0].Property != "mutual_exclusion" || restarts != 1 ||
		!doc.Counterexample.Reproduced || !strings.Contains(doc.Note, "logical databases") {
		t.Errorf("document: %s", stdout.String())
	}

	stdout.Reset()
	err = run(context.Background(), []string{"explore", "-redis", url, "-redlock", "-nodes", "1", "-faults", "none"},
		&stdout, &stderr)
	if err != nil || !strings.Contains(stdout.String(), "No violation") ||
		!strings.Contains(stdout.String(), "every schedule searched: yes") ||
		!strings.Contains(stdout.String(), "2 clients on 1 node,") {
		t.Errorf("redlock, one node, no faults: %v\n%s", err, stdout.String())
	}
}

// TestExploreInterrupted: a search whose context ends (Ctrl-C, SIGTERM)
// before it found anything prints and writes what it has, says it was
// cut short, and exits 130, as any interrupted run that found nothing.
func TestExploreInterrupted(t *testing.T) {
	b := redistest.Real(t)
	url := "redis://" + b.Addr()
	for _, format := range []string{"json", "table"} {
		ctx, cancel := context.WithCancel(context.Background())
		exploreStarting = cancel
		var stdout, stderr bytes.Buffer
		err := run(ctx, []string{"explore", "-redis", url, "-recipe", "4", "-fixed", "-format", format}, &stdout, &stderr)
		exploreStarting = nil
		cancel()
		if !errors.Is(err, progress.ErrInterrupted) || exitCode(err) != exitInterrupted {
			t.Fatalf("%s: %v (exit %d), want interrupted (exit %d)\n%s", format, err, exitCode(err),
				exitInterrupted, stderr.String())
		}
		if format == "table" {
			if !strings.Contains(stdout.String(), "The search was cut short: it was interrupted") ||
				!strings.Contains(stdout.String(), "(cut short: interrupted)") {
				t.Errorf("table:\n%s", stdout.String())
			}
			continue
		}
		var doc struct {
			Stopped    string            `json:"stopped"`
			Exhaustive bool              `json:"exhaustive"`
			Violations []json.RawMessage `json:"violations"`
			Unsteady   []json.RawMessage `json:"unsteady"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
			t.Fatalf("%v: %s", err, stdout.String())
		}
		if doc.Stopped != "interrupted" || doc.Exhaustive || doc.Violations == nil || doc.Unsteady == nil {
			t.Errorf("document: %s", stdout.String())
		}
	}
}

// TestExploreInterruptedAfterFinding: a progress line that says a
// property was found is never followed by silence. Random walks of
// recipe 1 (they go on after a violation) are interrupted once the
// progress line says what they found: the run prints the counterexample,
// replayed on a fresh server, and exits 1.
func TestExploreInterruptedAfterFinding(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // waits for the first progress line (5 s)
	t.Parallel()                                 // a server of its own
	b := redistest.Real(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout bytes.Buffer
	stderr := &watch{want: "found: mutual_exclusion", then: cancel}
	err := run(ctx, []string{"explore", "-redis", "redis://" + b.Addr(), "-recipe", "1", "-mode", "random",
		"-seed", "1", "-schedules", "1000000000"}, &stdout, stderr)
	if !errors.Is(err, errExploreFound) {
		t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.text())
	}
	out := stdout.String()
	for _, want := range []string{"The search was cut short: it was interrupted", "mutual_exclusion: at t=",
		"reproduced on redis-server"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// watch is a writer that calls then once what is written holds want.
type watch struct {
	want string
	then func()
	mu   sync.Mutex
	b    bytes.Buffer
}

func (w *watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if w.then != nil && strings.Contains(w.b.String(), w.want) {
		w.then()
		w.then = nil
	}
	return len(p), nil
}

func (w *watch) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
