package targets_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/testsupport/race"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// semaphoreManifest is a manifest of lock kind lock with permits as its
// "permits" field ("" for none), over the scripts of semaphoreScripts.
func semaphoreManifest(lock, permits string) string {
	p := ""
	if permits != "" {
		p = `"permits": ` + permits + `,`
	}
	return `{"lock": "` + lock + `", ` + p + ` "ops": {
  "acquire": {"script": "acquire.lua", "keys": ["${lock}"], "args": ["${token}", "${ttl}", 2],
    "ok": [1]},
  "release": {"script": "release.lua", "keys": ["${lock}"], "args": ["${token}"], "ok": [1]}}}`
}

var semaphoreScripts = map[string]string{
	"acquire.lua": `if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], 1)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`,
	"release.lua": `return redis.call('HDEL', KEYS[1], ARGV[1])`,
}

// TestSemaphoreManifest: a semaphore declares its permits, 1 to
// MaxPermits; a mutex or a read-write lock declares none; each mistake is
// an error naming the field. A semaphore checks holders, not
// mutual_exclusion, with one client more than its permits by default.
func TestSemaphoreManifest(t *testing.T) {
	for _, tc := range []struct {
		name, lock, permits, want string
	}{
		{"mutex with permits", "mutex", "2", `permits: goes with "lock": "semaphore"`},
		{"rwlock with permits", "rwlock", "2", `permits: goes with "lock": "semaphore"`},
		{"no permits", "semaphore", "", "permits: missing: a semaphore needs"},
		{"zero", "semaphore", "0", "permits: 0: want a whole number from 1 to 3"},
		{"negative", "semaphore", "-1", "permits: -1: want a whole number from 1 to 3"},
		{"too many", "semaphore", "4", "permits: 4: want a whole number from 1 to 3"},
		{"fraction", "semaphore", "1.5", "permits: 1.5: want a whole number"},
		{"text", "semaphore", `"2"`, `permits: "2": want a whole number`},
		{"unknown kind", "semaphores", "2",
			`lock: "semaphores": want mutex, rwlock or semaphore`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := semaphoreManifest(tc.lock, tc.permits)
			if tc.lock == "rwlock" {
				m = strings.NewReplacer(`"acquire"`, `"read_acquire"`,
					`"release"`, `"read_release"`).Replace(m)
			}
			_, err := targets.LoadRecipe(writeRecipe(t, m, semaphoreScripts))
			if !errors.Is(err, targets.ErrManifest) ||
				!strings.HasPrefix(err.Error(), "recipe.json: "+tc.want) ||
				strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line beginning recipe.json: %s", err, tc.want)
			}
		})
	}
	for permits := 1; permits <= targets.MaxPermits; permits++ {
		tg, err := targets.LoadRecipe(
			writeRecipe(t, semaphoreManifest("semaphore", string(rune('0'+permits))),
				semaphoreScripts),
		)
		if err != nil {
			t.Fatal(err)
		}
		if tg.Lock.Permits != permits || tg.Clients != permits+1 ||
			!slices.Contains(tg.Checks, result.Holders) ||
			slices.Contains(tg.Checks, result.MutualExclusion) || !tg.Traits.Alike {
			t.Errorf("%d permits: target has %d permits, %d clients, checks %v, alike %v",
				permits, tg.Lock.Permits, tg.Clients, tg.Checks, tg.Traits.Alike)
		}
	}
}

// TestSemaphoreExamples: each recipe of examples/recipes about
// semaphores and the liveness probe breaks what it should, reproduced on
// a fresh redis-server, or keeps every property checked in every
// schedule within its bounds.
func TestSemaphoreExamples(t *testing.T) {
	b := redistest.Real(t)
	for _, tc := range []struct {
		dir    string
		broken string // the property it breaks; "" for none
		faults []action.Fault
		nfault int
		long   bool // in the full run only
	}{
		// The limit off by one: a third client holds.
		{"semaphore/broken", result.Holders, nil, 0, false},
		// Every schedule, a crash at most: the full run has every fault.
		{"semaphore/fixed", "", []action.Fault{action.FaultCrash}, 1, false},
		{"semaphore/fixed", "", action.DefaultModel().FaultKinds, 1, true},
		// Two holders crash: with leases on the clients' clock, their
		// permits come back once the clock passes them.
		{"client-clock-semaphore/fixed", "", []action.Fault{action.FaultCrash}, 2, false},
		{"client-clock-semaphore/broken", result.Liveness, []action.Fault{action.FaultCrash}, 2, false},
		// A waiter that gave up stays first in the queue: the client
		// behind it, not the first to give up, waits forever.
		{"fair-queue/broken", result.Liveness, nil, 0, false},
		{"fair-queue/fixed", "", []action.Fault{action.FaultCrash}, 1, false},
	} {
		t.Run(tc.dir+"/"+action.JoinFaults(tc.faults, ","), func(t *testing.T) {
			if tc.long {
				redistest.SkipShort(t, redistest.NeedServer)
				if race.Enabled {
					t.Skip("the full run without -race has it")
				}
			}
			tg, err := targets.LoadRecipe(recipeDir(strings.Split(tc.dir, "/")...))
			if err != nil {
				t.Fatal(err)
			}
			m := action.DefaultModel()
			m.Clients = 3
			m.FaultKinds, m.Faults = tc.faults, tc.nfault
			res, broken := search(t, b.Client, tg, m, sched.Options{Workers: 2})
			if len(res.Unsteady) > 0 || res.Diverged > 0 {
				t.Errorf("%d unsteady, %d diverged: %v", len(res.Unsteady), res.Diverged,
					res.Unsteady)
			}
			if tc.broken == "" {
				if len(broken) > 0 || !res.Exhaustive {
					t.Errorf("broken %v, exhaustive %v; want nothing broken, exhaustively",
						broken, res.Exhaustive)
				}
				return
			}
			i := slices.IndexFunc(res.Violations,
				func(f result.Counterexample) bool { return f.Property == tc.broken })
			if i < 0 || !res.Violations[i].Reproduced {
				t.Fatalf("%s not found reproduced (found %v)", tc.broken, broken)
			}
			t.Logf("%s: %s", tc.broken, res.Violations[i].Message)
		})
	}
}

// TestSemaphoreOwnershipPerPermit: a semaphore's release is judged by its
// own permit. One that gives back a permit whose lease ran out and went
// to another client's take, and answers success, breaks ownership; the
// same semaphore's releases after another client took a free permit do
// not (the fixed recipes above keep ownership under a pause past the
// lease).
func TestSemaphoreOwnershipPerPermit(t *testing.T) {
	b := redistest.Real(t)
	dir := recipeDir("client-clock-semaphore", "fixed")
	manifest, err := os.ReadFile(filepath.Join(dir, targets.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	acquire, err := os.ReadFile(filepath.Join(dir, "acquire.lua"))
	if err != nil {
		t.Fatal(err)
	}
	tg, err := targets.LoadRecipe(writeRecipe(t, string(manifest), map[string]string{
		"acquire.lua": string(acquire),
		// Gives a permit back whether or not the caller still had one.
		"release.lua": `redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('INCR', KEYS[1])
return 1`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	m := action.DefaultModel()
	m.Clients, m.FaultKinds = 3, []action.Fault{action.FaultPauseLong}
	res, broken := search(t, b.Client, tg, m, sched.Options{Stop: []string{result.Ownership}})
	i := slices.IndexFunc(res.Violations,
		func(f result.Counterexample) bool { return f.Property == result.Ownership })
	if i < 0 || !res.Violations[i].Reproduced {
		t.Fatalf("ownership not found reproduced (found %v)", broken)
	}
	msg := res.Violations[i].Message
	t.Log(msg)
	if !strings.Contains(msg, "had taken its permit since") {
		t.Errorf("message %q does not say whose take had the permit", msg)
	}
}
