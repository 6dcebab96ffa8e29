package targets_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/race"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/redis/go-redis/v9"
)

// search explores t under m with opts and returns the properties broken.
func search(
	t *testing.T, rdb *redis.Client, tg *sched.Target, m action.Model, o sched.Options,
) (*result.Result, []string) {
	t.Helper()
	ctx := context.Background()
	e, err := sched.NewExplorer(ctx, rdb, tg, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Explore(ctx, o)
	if err != nil {
		t.Fatalf("%s: %v", tg.Name, err)
	}
	var broken []string
	for _, f := range res.Violations {
		broken = append(broken, f.Property)
	}
	t.Logf(
		"%s: %d schedules, exhaustive %v, broken %v", tg.Name, res.Schedules, res.Exhaustive,
		broken,
	)
	return res, broken
}

// lean is the default model with fewer fault kinds: a pause past the
// lease and a crash, the two every recipe's failure needs.
func lean() action.Model {
	m := action.DefaultModel()
	m.FaultKinds = []action.Fault{action.FaultPauseLong, action.FaultCrash}
	return m
}

func TestFixesKeepTheirProperties(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // exhaustive searches: the full run has them
	b := redistest.Real(t)
	for _, n := range []string{"1", "2", "3", "6", "11"} {
		t.Run(n, func(t *testing.T) {
			tg, err := targets.Recipe(n, true)
			if err != nil {
				t.Fatal(err)
			}
			m := lean()
			if race.Enabled {
				// the full run without -race has the pause too
				m.FaultKinds = []action.Fault{action.FaultCrash}
			}
			res, broken := search(t, b.Client, tg, m, sched.Options{})
			if len(broken) > 0 || !res.Exhaustive || res.Schedules == 0 {
				t.Errorf(
					"recipe %s fixed: broken %v, exhaustive %v, %d schedules; want nothing "+
						"broken, exhaustively",
					n, broken, res.Exhaustive, res.Schedules,
				)
			}
		})
	}
}

// TestTokenLockWithoutFencing: locking.Mutex keeps mutual exclusion, but
// a pause past the lease loses an update; with the write fenced, both
// hold.
func TestTokenLockWithoutFencing(t *testing.T) {
	b := redistest.Real(t)
	tg, _ := targets.Recipe("6", false)
	m := lean()
	m.FaultKinds = []action.Fault{action.FaultPauseLong}
	res, broken := search(t, b.Client, tg, m, sched.Options{})
	if !slices.Equal(broken, []string{result.Resource}) || !res.Exhaustive {
		t.Fatalf("recipe 6: broken %v (exhaustive %v), want only resource", broken, res.Exhaustive)
	}
	m.FaultKinds = nil
	m.Faults = 0
	if _, broken := search(t, b.Client, tg, m, sched.Options{}); len(broken) > 0 {
		t.Errorf("recipe 6 without faults: broken %v", broken)
	}
}

// TestWatchdog: renewal holds under pauses shorter than the lease less
// the renewal interval, and loses an update under a pause past it.
func TestWatchdog(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // exhaustive searches: the full run has them
	b := redistest.Real(t)
	m := lean()
	m.FaultKinds = []action.Fault{action.FaultPauseShort}
	if race.Enabled {
		// the full run without -race has the short pause
		m.FaultKinds = []action.Fault{action.FaultCrash}
	}
	m.Ticks = 2
	if res, broken := search(t, b.Client, targets.Watchdog(false), m, sched.Options{}); len(
		broken,
	) > 0 ||
		!res.Exhaustive {
		t.Errorf("watchdog under short pauses: broken %v, exhaustive %v", broken, res.Exhaustive)
	}
	m.FaultKinds = []action.Fault{action.FaultPauseLong}
	_, broken := search(t, b.Client, targets.Watchdog(false), m, sched.Options{StopAtFirst: true})
	if !slices.Equal(broken, []string{result.Resource}) {
		t.Errorf("watchdog under long pauses: broken %v, want resource", broken)
	}
}

// TestWatchdogFenced: the same search (pct, one seed) that finds the
// watchdog's write landing after its lease under long pauses finds
// nothing once the write is fenced: the late write is refused.
func TestWatchdogFenced(t *testing.T) {
	b := redistest.Real(t)
	m := lean()
	m.FaultKinds = []action.Fault{action.FaultPauseLong}
	m.Ticks = 2
	o := sched.Options{Mode: "pct", Seed: 1, Schedules: 200}
	if _, broken := search(t, b.Client, targets.Watchdog(false), m, o); !slices.Equal(
		broken,
		[]string{result.Resource},
	) {
		t.Fatalf(
			"watchdog without fencing: broken %v, want resource (else this search shows nothing)",
			broken,
		)
	}
	res, broken := search(t, b.Client, targets.Watchdog(true), m, o)
	if len(broken) > 0 || res.Schedules != 200 {
		t.Errorf(
			"watchdog fenced: broken %v in %d schedules; want nothing in 200", broken,
			res.Schedules,
		)
	}
}

func readScripts(t *testing.T, dir string, names ...string) []targets.Script {
	t.Helper()
	var out []targets.Script
	for _, n := range names {
		p := filepath.Join("..", "..", "..", "examples", "recipes", dir, n+".lua")
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, targets.Script{Name: p, Source: string(src)})
	}
	return out
}

func TestLuaExamples(t *testing.T) {
	b := redistest.Real(t)
	for _, tc := range []struct {
		dir    string
		broken []string
	}{
		{"correct", nil},
		// Its extension renews another's hold: two holders, and a
		// success answered to a client whose hold had ended.
		{"broken", []string{result.MutualExclusion, result.Ownership}},
		{"correct-rw", nil},
		{"broken-rw", []string{result.MutualExclusion}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			var r targets.LuaRecipe
			if filepath.Ext(tc.dir) == "" && len(tc.dir) > 3 && tc.dir[len(tc.dir)-3:] == "-rw" {
				s := readScripts(
					t, tc.dir, "read-acquire", "read-release", "write-acquire", "write-release",
				)
				r = targets.LuaRecipe{
					ReadAcquire:  s[0],
					ReadRelease:  s[1],
					WriteAcquire: s[2],
					WriteRelease: s[3],
				}
			} else {
				s := readScripts(t, tc.dir, "acquire", "release", "extend")
				r = targets.LuaRecipe{Acquire: s[0], Release: s[1], Extend: s[2]}
			}
			tg, err := targets.Lua(r)
			if err != nil {
				t.Fatal(err)
			}
			o := sched.Options{}
			if tc.broken != nil {
				o.StopAtFirst = true
			}
			m := lean()
			if tg.Clients > 2 {
				m.FaultKinds = []action.Fault{action.FaultPauseLong} // three clients: keep the test lean
				if (testing.Short() || race.Enabled) && tc.broken == nil {
					// Every schedule with a pause past the lease is about
					// 10,000 of them; with a crash, which ends a hold by
					// the lease too, some 160.
					t.Log(
						"-short or -race: a crash instead of a pause past the lease; the full " +
							"run has the pause",
					)
					m.FaultKinds = []action.Fault{action.FaultCrash}
				}
			}
			res, broken := search(t, b.Client, tg, m, o)
			if !slices.Equal(broken, tc.broken) || (tc.broken == nil && !res.Exhaustive) {
				t.Errorf(
					"%s: broken %v (exhaustive %v), want %v", tc.dir, broken, res.Exhaustive,
					tc.broken,
				)
			}
		})
	}
}

func TestLuaErrors(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	good := readScripts(t, "correct", "release")[0]
	for _, tc := range []struct {
		name, acquire string
		want          error
	}{
		{"does not parse", "return redis.call(", targets.ErrBadScript},
		{"answers outside the convention", "return 'yes'", sched.ErrTarget},
		{"fails", "return redis.call('NOSUCHCOMMAND')", sched.ErrTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := targets.Lua(
				targets.LuaRecipe{
					Acquire: targets.Script{Name: "acquire.lua", Source: tc.acquire},
					Release: good,
				},
			)
			if err != nil {
				t.Fatal(err)
			}
			e, err := sched.NewExplorer(ctx, b.Client, tg, action.DefaultModel())
			if err == nil {
				_, err = e.Explore(ctx, sched.Options{})
				e.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := targets.Lua(targets.LuaRecipe{Acquire: good}); err == nil {
		t.Error("a recipe without release was accepted")
	}
}

// TestCounterexampleReplays: the shortest counterexample of recipe 1
// replays on a fresh redis-server, and its timeline marks the step.
func TestCounterexampleReplays(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	tg, _ := targets.Recipe("1", false)
	e, err := sched.NewExplorer(ctx, b.Client, tg, lean())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Explore(ctx, sched.Options{Stop: []string{result.MutualExclusion}})
	if err != nil || len(res.Violations) == 0 {
		t.Fatalf("recipe 1: %v, %v", err, res)
	}
	f := res.Violations[0]
	if len(f.Steps) != 6 {
		t.Errorf(
			"counterexample of %d steps, want the 6 of start, GET, start, GET, SET, SET: %v",
			len(f.Steps), f.Steps,
		)
	}
	rep, err := sched.Reproduce(ctx, e.Target(), e.Model(), f)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Reproduced || rep.Server == "" {
		t.Fatalf("not reproduced: %+v", rep)
	}
	if len(rep.Timeline.Marked()) == 0 {
		t.Error("the timeline marks no step")
	}
}
