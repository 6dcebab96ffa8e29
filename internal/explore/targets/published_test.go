package targets_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/race"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// publishedCases is each recipe of testdata/published (the lock scripts of
// published libraries, written as manifests from docs/explorer.md alone)
// with the verdict it must get: the property its library's bug breaks,
// or "" for none. The models are small, so that every case takes seconds:
// the fuller runs are in testdata/published/README.md.
var publishedCases = []struct {
	dir     string
	want    string // the property found, or "" for a clean, exhaustive search
	clients int
	faults  []action.Fault
	ttls    []time.Duration
	checks  []string // nil: the target's
	// random: a clean case searched by this many random schedules (seed 1),
	// not exhaustively
	random int
}{
	{dir: "redsync", clients: 2, faults: []action.Fault{action.FaultPauseLong}},
	{dir: "redislock-bsm", clients: 2, faults: []action.Fault{action.FaultPauseLong}},
	{dir: "node-redlock", clients: 2, faults: []action.Fault{action.FaultPauseLong}},
	{dir: "python-redis-lock", clients: 2, faults: []action.Fault{action.FaultPauseLong}},
	{dir: "redis-py", clients: 2, faults: []action.Fault{action.FaultPauseLong}},
	{dir: "pottery", clients: 2, faults: []action.Fault{action.FaultPauseLong}},
	{dir: "laravel", clients: 2, faults: []action.Fault{action.FaultCrash}},
	{dir: "symfony", clients: 2, faults: []action.Fault{action.FaultPauseLong}},
	{dir: "spring-registry-6", clients: 2, faults: []action.Fault{action.FaultPauseLong}},
	{dir: "redisson-lock", clients: 2, faults: []action.Fault{action.FaultPauseShort}},
	// Its exhaustive search takes minutes: 200 random schedules here (they
	// find the bug of redisson-rwlock-2019), the exhaustive run in the README.
	{dir: "redisson-rwlock", clients: 3, faults: []action.Fault{action.FaultPauseShort},
		ttls: []time.Duration{
			10 * time.Second,
			3 * time.Second,
		}, checks: []string{result.MutualExclusion}, random: 200},

	{
		dir:     "redisson-lock-2016",
		want:    result.Ownership,
		clients: 2,
		faults:  []action.Fault{action.FaultPauseLong},
	},
	{
		dir:     "redisson-rwlock",
		want:    result.Ownership,
		clients: 2,
		faults:  []action.Fault{action.FaultPauseLong},
	},
	{
		dir:     "redisson-rwlock-2019",
		want:    result.MutualExclusion,
		clients: 3,
		faults:  []action.Fault{action.FaultPauseShort},
		ttls: []time.Duration{
			10 * time.Second,
			3 * time.Second,
		},
		checks: []string{result.MutualExclusion},
	},
	{dir: "laravel-5.5", want: result.Liveness, clients: 2,
		faults: []action.Fault{action.FaultCrash}},
	{
		dir:     "laravel-5.5",
		want:    result.MutualExclusion,
		clients: 3,
		faults:  []action.Fault{action.FaultPauseLong},
		checks:  []string{result.MutualExclusion},
	},
	{
		dir:     "spring-registry-5",
		want:    result.Ownership,
		clients: 2,
		faults:  []action.Fault{action.FaultPauseLong},
	},
}

// TestPublishedRecipes: every manifest of testdata/published loads, and
// the explorer's verdict on it is its library's: clean for the locks as
// they are, the historical bug found (the first schedule that shows it)
// for the versions that had one.
func TestPublishedRecipes(t *testing.T) {
	b := redistest.Real(t)
	for _, tc := range publishedCases {
		name := tc.dir + "/clean"
		if tc.want != "" {
			name = tc.dir + "/" + tc.want
		}
		t.Run(name, func(t *testing.T) {
			tg, err := targets.LoadRecipe(filepath.Join("testdata", "published", tc.dir))
			if err != nil {
				t.Fatal(err)
			}
			if tc.checks != nil {
				tg.Checks = tc.checks
			}
			m := action.DefaultModel()
			m.Clients, m.FaultKinds, m.TTLs = tc.clients, tc.faults, tc.ttls
			m.Ticks, m.Attempts = 1, 1
			if len(tc.ttls) > 0 {
				m.TTL = slices.Max(tc.ttls)
			}
			if tc.want == "" && race.Enabled {
				// Under the race detector, a clean lock is searched with a
				// crash only; the full run without -race has its faults.
				m.FaultKinds, m.TTLs, m.TTL = []action.Fault{
					action.FaultCrash,
				}, nil, action.DefaultModel().TTL
				tc.random = min(tc.random, 20)
			}
			if tc.want == "" && tc.random > 0 {
				res, broken := search(
					t, b.Client, tg, m,
					sched.Options{Mode: "random", Schedules: tc.random, Seed: 1},
				)
				if len(broken) > 0 || res.Schedules != tc.random {
					t.Errorf(
						"broken %v in %d schedules; want nothing broken in %d", broken,
						res.Schedules, tc.random,
					)
				}
				return
			}
			if tc.want == "" {
				res, broken := search(t, b.Client, tg, m, sched.Options{})
				if len(broken) > 0 || !res.Exhaustive || res.Schedules == 0 {
					t.Errorf(
						"broken %v, exhaustive %v, %d schedules; want nothing broken, exhaustively",
						broken, res.Exhaustive, res.Schedules,
					)
				}
				return
			}
			_, broken := search(
				t, b.Client, tg, m, sched.Options{Stop: []string{tc.want}, NoShrink: true},
			)
			if !slices.Contains(broken, tc.want) {
				t.Errorf("broken %v; want %s", broken, tc.want)
			}
		})
	}
}

// TestPublishedScriptStep: a step may be a script, run with one EVALSHA
// between the op's other round trips; its reply can be saved and tested.
func TestPublishedScriptStep(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	dir := writeRecipe(t, `{
  "ops": {
    "acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "PX", "${ttl}"]}], "ok": `+
		`["OK"]},
    "release": {"steps": [
      {"script": "del.lua", "keys": ["${lock}"], "args": ["${token}"], "save": "n"},
      {"cmd": ["GET", "${lock}"], "if": {"eq": ["${n}", 1]}}
    ], "ok": [null]}
  }
}`, map[string]string{"del.lua": `if redis.call('GET', ` +
		`KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`})
	tg, err := targets.LoadRecipe(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := action.DefaultModel()
	m.Clients, m.FaultKinds, m.Ticks, m.Attempts = 2, []action.Fault{action.FaultCrash}, 1, 1
	e, err := sched.NewExplorer(ctx, b.Client, tg, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Explore(ctx, sched.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Violations) > 0 || !res.Exhaustive {
		t.Errorf(
			"violations %v, exhaustive %v; want none, exhaustively", res.Violations, res.Exhaustive,
		)
	}
	// A step's script that does not load is refused, naming the step.
	bad := writeRecipe(
		t,
		`{"ops": {"acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX"]}], "ok": `+
			`["OK"]},
  "release": {"steps": [{"script": "del.lua", "keys": ["${lock}"]}], "ok": [1]}}}`,
		map[string]string{"del.lua": "return redis.call("},
	)
	if tg, err = targets.LoadRecipe(bad); err != nil {
		t.Fatal(err)
	}
	if _, err := sched.NewExplorer(ctx, b.Client, tg, m); !errors.Is(err, targets.ErrManifest) ||
		!strings.HasPrefix(
			err.Error(),
			"recipe.json: ops.release.steps[0].script: del.lua does not load",
		) {
		t.Errorf("a step's script that does not parse: %v", err)
	}
}

// TestPublishedKeyInside: a key that names the lock inside a longer string
// ("redlock:${lock}", "{${lock}}:count") follows the virtual clock as the
// lock's own key does: a lease that runs out there shows.
func TestPublishedKeyInside(t *testing.T) {
	b := redistest.Real(t)
	for _, key := range []string{"redlock:${lock}", "{${lock}}:owner"} {
		t.Run(key, func(t *testing.T) {
			dir := writeRecipe(t, `{
  "ops": {
    "acquire": {"steps": [{"cmd": ["SET", "`+key+`", "${token}", "NX", "PX", "${ttl}"]}], "ok": `+
				`["OK"]},
    "release": {"steps": [
      {"cmd": ["GET", "`+key+`"], "save": "v"},
      {"cmd": ["DEL", "`+key+`"], "if": {"eq": ["${v}", "${token}"]}}
    ], "ok": [1]}
  }
}`, nil)
			tg, err := targets.LoadRecipe(dir)
			if err != nil {
				t.Fatal(err)
			}
			m := action.DefaultModel()
			m.Clients, m.FaultKinds, m.Ticks, m.Attempts = 2, []action.Fault{action.FaultPauseLong}, 1, 1
			_, broken := search(
				t, b.Client, tg, m,
				sched.Options{Stop: []string{result.Ownership}, NoShrink: true},
			)
			if !slices.Contains(broken, result.Ownership) {
				t.Errorf(
					"broken %v; want ownership (the check-then-delete of a lease that ran out)",
					broken,
				)
			}
		})
	}
}
