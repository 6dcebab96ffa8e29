package targets_test

import (
	"context"
	"errors"
	"os"
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

// writeRecipe writes a recipe directory: recipe.json and the given files.
func writeRecipe(t *testing.T, manifest string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, targets.ManifestFile)
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// issueExample is the manifest of docs/explorer.md.
const issueExample = `{
  "name": "my lock",
  "lock": "mutex",
  "ttl_unit": "ms",
  "reentrant": false,
  "ops": {
    "acquire": {"script": "acquire.lua", "keys": ["${lock}"], "args": ["${ttl}", "${token}"], ` +
	`"ok": [null]},
    "release": {"steps": [
      {"cmd": ["GET", "${lock}"], "save": "v"},
      {"cmd": ["DEL", "${lock}"], "if": {"eq": ["${v}", "${token}"]}}
    ], "ok": [1]},
    "extend":  {"script": "extend.lua", "keys": ["${lock}"], "args": ["${token}", "${ttl}"], ` +
	`"ok": [1, "OK"]}
  }
}`

var exampleScripts = map[string]string{
	"acquire.lua": `if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[1]) then return nil end
return redis.call('PTTL', KEYS[1])`,
	"extend.lua": `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', ` +
		`KEYS[1], ARGV[2]) end
return 0`,
}

// TestManifestErrors: each bad manifest is refused with ErrManifest and
// one line naming the field.
func TestManifestErrors(t *testing.T) {
	release := `"release": {"script": "acquire.lua", "ok": [1]}`
	mutex := func(acquire string) string {
		return `{"ops": {"acquire": ` + acquire + `, ` + release + `}}`
	}
	for _, tc := range []struct {
		name, manifest string
		files          map[string]string
		want           string
	}{
		{"the placeholder misspelt", `{"ops": {"acquire": {"script": "acquire.lua", "ok": [1]}, ` +
			`"release": {"steps": [
			{"cmd": ["GET", "${lock}"], "save": "v"}, {"cmd": ["DEL", "${lock}"], "if": {"eq": ` +
			`["${v}", "${tokn}"]}}],
			"ok": [1]}}}`, nil, "recipe.json: ops.release.steps[1].if: unknown placeholder " +
			"${tokn}"},
		{"unknown op", `{"ops": {"acquire": {"script": "acquire.lua", "ok": ` +
			`[1]}, ` + release + `, "unlock": {}}}`, nil,
			"recipe.json: ops.unlock: unknown op"},
		{"rwlock op in a mutex", `{"ops": {"acquire": {"script": "acquire.lua", "ok": ` +
			`[1]}, ` + release +
			`, "read_acquire": {}}}`, nil, "recipe.json: ops.read_acquire: unknown op"},
		{"missing op", `{"lock": "rwlock", "ops": {"read_acquire": {"script": "acquire.lua", ` +
			`"ok": [1]}}}`, nil,
			"recipe.json: ops.read_release: missing"},
		{"no ops", `{"name": "x"}`, nil, "recipe.json: ops: missing"},
		{"ok a boolean", mutex(`{"script": "acquire.lua", "ok": [true]}`), nil, "recipe.json: " +
			"ops.acquire.ok[0]: true"},
		{"ok a fraction", mutex(`{"script": "acquire.lua", "ok": [1.5]}`), nil, "recipe.json: " +
			"ops.acquire.ok[0]: 1.5"},
		{"ok empty", mutex(`{"script": "acquire.lua", "ok": []}`), nil, "recipe.json: " +
			"ops.acquire.ok: want a non-empty"},
		{"ok an object", mutex(`{"script": "acquire.lua", "ok": [{"a": ` +
			`1}]}`), nil, "recipe.json: ops.acquire.ok[0]"},
		{"ok not a list", mutex(`{"script": "acquire.lua", "ok": 1}`), nil, "recipe.json: " +
			"ops.acquire.ok: want a list of the replies"},
		{"ok a word", mutex(`{"script": "acquire.lua", "ok": "all"}`), nil, `recipe.json: ` +
			`ops.acquire.ok: "all": want a list`},
		{"ok any for a take", mutex(`{"script": "acquire.lua", "ok": "any"}`), nil,
			`recipe.json: ops.acquire.ok: "any" is for a release or extend`},
		{"ok missing", mutex(`{"script": "acquire.lua"}`), nil, "recipe.json: ops.acquire.ok: " +
			"missing"},
		{"missing script file", mutex(`{"script": "nope.lua", "ok": [1]}`), nil, "recipe.json: " +
			"ops.acquire.script: no file"},
		{"script and steps", mutex(`{"script": "acquire.lua", "steps": [{"cmd": ["GET", ` +
			`"${lock}"]}], "ok": [1]}`), nil,
			"recipe.json: ops.acquire: give script or steps, not both"},
		{"neither", mutex(`{"ok": [1]}`), nil, "recipe.json: ops.acquire: give script"},
		{"unknown placeholder in a key", mutex(`{"script": "acquire.lua", "keys": ["${lok}"], ` +
			`"ok": [1]}`), nil,
			"recipe.json: ops.acquire.keys[0]: unknown placeholder ${lok}"},
		{"unknown placeholder in an arg", mutex(`{"script": "acquire.lua", "args": ` +
			`["x${ttl}${ms}"], "ok": [1]}`), nil,
			"recipe.json: ops.acquire.args[0]: unknown placeholder ${ms}"},
		{"a save used before it is made", mutex(`{"steps": [{"cmd": ["GET", "${v}"]}, {"cmd": ` +
			`["GET", "${lock}"], "save": "v"}],
			"ok": [1]}`), nil, "recipe.json: ops.acquire.steps[0].cmd[1]: unknown placeholder " +
			"${v}"},
		{"a save of another op", `{"ops": {"acquire": {"steps": [{"cmd": ["GET", "${lock}"], ` +
			`"save": "v"}], "ok": [1]},
			"release": {"steps": [{"cmd": ["DEL", "${v}"]}], "ok": [1]}}}`, nil,
			"recipe.json: ops.release.steps[0].cmd[1]: unknown placeholder ${v}"},
		{"unterminated", mutex(`{"steps": [{"cmd": ["GET", "${lock"]}], "ok": [1]}`), nil,
			"recipe.json: ops.acquire.steps[0].cmd[1]: unterminated placeholder"},
		{"a transaction", mutex(`{"steps": [{"cmd": ["MULTI"]}], "ok": [1]}`), nil,
			"recipe.json: ops.acquire.steps[0].cmd[0]: MULTI is a transaction"},
		{"a blocking command", mutex(`{"steps": [{"cmd": ["BLPOP", "${lock}", "0"]}], "ok": ` +
			`[1]}`), nil,
			"recipe.json: ops.acquire.steps[0].cmd[0]: BLPOP is a blocking command"},
		{"no command", mutex(`{"steps": [{"save": "v"}], "ok": [1]}`), nil, "recipe.json: " +
			"ops.acquire.steps[0].cmd: missing"},
		{"two conditions", mutex(`{"steps": [{"cmd": ["GET", "${lock}"], "if": {"eq": ["a", ` +
			`"b"], "nil": "a"}}], "ok": [1]}`),
			nil, "recipe.json: ops.acquire.steps[0].if: want exactly one of eq, ne, nil"},
		{"eq of one", mutex(`{"steps": [{"cmd": ["GET", "${lock}"], "if": {"eq": ["a"]}}], "ok": ` +
			`[1]}`), nil,
			"recipe.json: ops.acquire.steps[0].if.eq: want two values"},
		{"save of a placeholder's name", mutex(`{"steps": [{"cmd": ["GET", "${lock}"], "save": ` +
			`"token"}], "ok": [1]}`), nil,
			"recipe.json: ops.acquire.steps[0].save: \"token\" is a placeholder"},
		{"unknown step field", mutex(`{"steps": [{"cmd": ["GET", "${lock}"], "iff": {}}], "ok": ` +
			`[1]}`), nil,
			"recipe.json: ops.acquire.steps[0].iff: unknown field"},
		{"a step with cmd and script", mutex(`{"steps": [{"cmd": ["GET", "${lock}"], "script": ` +
			`"acquire.lua"}], "ok": [1]}`),
			nil, "recipe.json: ops.acquire.steps[0]: give cmd or script, not both"},
		{"a step with keys and no script", mutex(`{"steps": [{"cmd": ["GET", "${lock}"], "keys": ` +
			`["${lock}"]}], "ok": [1]}`),
			nil, "recipe.json: ops.acquire.steps[0]: keys and args go with script"},
		{"EVAL in a step", mutex(`{"steps": [{"cmd": ["EVAL", "return 1", "0"]}], "ok": [1]}`), nil,
			"recipe.json: ops.acquire.steps[0].cmd[0]: EVAL in a step: give the step a script"},
		{"a step's missing script", mutex(`{"steps": [{"script": "nope.lua"}], "ok": [1]}`), nil,
			"recipe.json: ops.acquire.steps[0].script: no file"},
		{"a step script's unknown placeholder", mutex(`{"steps": [{"script": "acquire.lua", ` +
			`"args": ["${v}"]}], "ok": [1]}`),
			nil, "recipe.json: ops.acquire.steps[0].args[0]: unknown placeholder ${v}"},
		{"keys with steps", mutex(`{"steps": [{"cmd": ["GET", "${lock}"]}], "keys": ["${lock}"], ` +
			`"ok": [1]}`), nil,
			"recipe.json: ops.acquire.keys: goes with script"},
		{"unknown lock", `{"lock": "spinlock", "ops": {}}`, nil, `recipe.json: lock: ` +
			`"spinlock": want mutex, rwlock or semaphore`},
		{"unknown ttl unit", `{"ttl_unit": "us", "ops": {}}`, nil, `recipe.json: ttl_unit: "us": ` +
			`want ms or s`},
		{"reentrant not a boolean", `{"reentrant": "yes", "ops": {}}`, nil, "recipe.json: " +
			"reentrant: want true or false"},
		{"bad JSON", `{"ops": {"acquire": }`, nil, "recipe.json: not JSON: line 1"},
		{"not an object", `[1]`, nil, "recipe.json: want a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := tc.files
			if files == nil {
				files = map[string]string{"acquire.lua": "return 1"}
			}
			_, err := targets.LoadRecipe(writeRecipe(t, tc.manifest, files))
			if !errors.Is(err, targets.ErrManifest) || !strings.HasPrefix(err.Error(), tc.want) ||
				strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v; want ErrManifest, one line beginning %q", err, tc.want)
			}
		})
	}
	if _, err := targets.LoadRecipe(t.TempDir()); !errors.Is(err, targets.ErrManifest) ||
		!strings.Contains(err.Error(), "no recipe.json") {
		t.Errorf("a directory without a manifest: %v", err)
	}
}

// TestManifestExample: the documented manifest loads; a step command
// that is no data command Redis has is refused when it loads, naming the
// field.
func TestManifestExample(t *testing.T) {
	tg, err := targets.LoadRecipe(writeRecipe(t, issueExample, exampleScripts))
	if err != nil {
		t.Fatal(err)
	}
	if tg.Name != "my lock" || tg.Clients != 2 || !slices.Contains(tg.Checks, result.Ownership) {
		t.Errorf("target %q, %d clients, checks %v", tg.Name, tg.Clients, tg.Checks)
	}
	b := redistest.Real(t)
	ctx := context.Background()
	bad := strings.Replace(issueExample, `["DEL", "${lock}"]`, `["DELETE", "${lock}"]`, 1)
	if _, err = targets.LoadRecipe(writeRecipe(t, bad, exampleScripts)); !errors.Is(
		err,
		targets.ErrManifest,
	) ||
		!strings.Contains(
			err.Error(),
			"ops.release.steps[1].cmd[0]: DELETE is not a data command",
		) {
		t.Errorf("an unknown command: %v", err)
	}
	scripts := map[string]string{
		"acquire.lua": "return redis.call(",
		"extend.lua":  exampleScripts["extend.lua"],
	}
	tg, err = targets.LoadRecipe(writeRecipe(t, issueExample, scripts))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sched.NewExplorer(ctx, b.Client, tg, action.DefaultModel()); !errors.Is(
		err,
		targets.ErrManifest,
	) ||
		!errors.Is(err, targets.ErrBadScript) ||
		!strings.HasPrefix(err.Error(), "recipe.json: ops.acquire.script:") {
		t.Errorf("a script that does not parse: %v", err)
	}
}

// recipeDir is a directory of examples/recipes.
func recipeDir(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", "..", "examples", "recipes"}, parts...)...)
}

// recipeCases is each class of examples/recipes: the property its broken
// version breaks, and the model that shows it.
var recipeCases = []struct {
	class    string
	property string
	clients  int
	ttls     []time.Duration
	faults   []action.Fault
}{
	{"check-then-delete", result.Ownership, 2, nil, []action.Fault{action.FaultPauseLong}},
	{"check-then-delete", result.MutualExclusion, 3, nil, []action.Fault{action.FaultPauseLong}},
	{"setnx-then-expire", result.Liveness, 2, nil, []action.Fault{action.FaultCrash}},
	{"reentrant-release", result.Ownership, 2, nil, []action.Fault{action.FaultPauseLong}},
	{"rw-leases", result.MutualExclusion, 3, []time.Duration{10 * time.Second, 3 * time.Second},
		[]action.Fault{action.FaultPauseShort}},
	{"unlock-reports", result.Ownership, 2, nil, []action.Fault{action.FaultPauseLong}},
	{"rw-counter", result.Liveness, 2, nil, []action.Fault{action.FaultCrash}},
	{"holder-id", result.Ownership, 2, nil, []action.Fault{action.FaultPauseLong}},
}

// TestRecipeExamplesBroken: each broken example breaks its property, with
// a counterexample that a fresh redis-server reproduces.
func TestRecipeExamplesBroken(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	for _, tc := range recipeCases {
		t.Run(tc.class+"/"+tc.property, func(t *testing.T) {
			tg, err := targets.LoadRecipe(recipeDir(tc.class, "broken"))
			if err != nil {
				t.Fatal(err)
			}
			m := action.DefaultModel()
			m.Clients, m.TTLs, m.FaultKinds = tc.clients, tc.ttls, tc.faults
			if len(tc.ttls) > 0 {
				m.TTL = slices.Max(tc.ttls)
				m.Ticks = 1 // the bounds of TestRecipeLeasesAlike
			}
			e, err := sched.NewExplorer(ctx, b.Client, tg, m)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			res, err := e.Explore(ctx, sched.Options{Stop: []string{tc.property}})
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(
				res.Violations,
				func(f result.Counterexample) bool { return f.Property == tc.property },
			)
			if i < 0 {
				t.Fatalf("%s not found (found %v)", tc.property, res.Violations)
			}
			f := res.Violations[i]
			t.Logf(
				"%d schedules; %s in %d steps: %s", res.Schedules, f.Property, len(f.Steps),
				f.Message,
			)
			rep, err := sched.Reproduce(ctx, e.Target(), e.Model(), f)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Reproduced {
				t.Errorf("not reproduced on a fresh redis-server: %s", rep.Note)
			}
		})
	}
}

// TestRecipeExamplesMessages: liveness names the step that left the key
// behind and the crash of its client only; ownership says why the hold
// had ended.
func TestRecipeExamplesMessages(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	for _, tc := range []struct {
		class, property string
		clients         int
		faults          []action.Fault
		want            []string
	}{
		{"setnx-then-expire", result.Liveness, 2, []action.Fault{action.FaultCrash},
			[]string{"lock:L has no expiry: A's ops.acquire.steps[0] (SETNX)", "and A " +
				"crashed", "B gave up"}},
		{"rw-counter", result.Liveness, 2, []action.Fault{action.FaultCrash},
			[]string{"lock:L:readers has no expiry: A's ops.read_acquire " +
				"(read-acquire.lua)", "and A crashed",
				"its write_acquire is still refused"}},
		{"unlock-reports", result.Ownership, 2, []action.Fault{action.FaultPauseLong},
			[]string{`ops.release (release.lua) answered "OK", a success`, "lease had run out " +
				"(lock:L expired)"}},
	} {
		t.Run(tc.class, func(t *testing.T) {
			tg, err := targets.LoadRecipe(recipeDir(tc.class, "broken"))
			if err != nil {
				t.Fatal(err)
			}
			m := action.DefaultModel()
			m.Clients, m.FaultKinds = tc.clients, tc.faults
			_, broken := search(t, b.Client, tg, m, sched.Options{NoShrink: true})
			if !slices.Contains(broken, tc.property) {
				t.Fatalf("broken %v, want %s", broken, tc.property)
			}
			e, err := sched.NewExplorer(ctx, b.Client, tg, m)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			res, err := e.Explore(ctx, sched.Options{Stop: []string{tc.property}})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range res.Violations {
				if f.Property != tc.property {
					continue
				}
				for _, w := range tc.want {
					if !strings.Contains(f.Message, w) {
						t.Errorf("message %q lacks %q", f.Message, w)
					}
				}
				if tc.property == result.Liveness && strings.Count(f.Message, "crashed") != 1 {
					t.Errorf("message %q: one crash, that of the key's writer", f.Message)
				}
			}
		})
	}
}

// TestRecipeExamplesFixed: each fix keeps every property checked, in
// every schedule within the bounds, with two clients and with three.
func TestRecipeExamplesFixed(t *testing.T) {
	b := redistest.Real(t)
	for _, class := range []string{
		"check-then-delete", "setnx-then-expire", "reentrant-release", "rw-leases",
		"unlock-reports", "rw-counter", "holder-id"} {
		clients := []int{2, 3}
		if race.Enabled {
			clients = clients[:1] // three clients in the full run without -race
		}
		for _, clients := range clients {
			t.Run(class+"/"+string(rune('0'+clients)), func(t *testing.T) {
				if clients == 3 {
					redistest.SkipShort(t, redistest.NeedServer) // the full run has them
				}
				tg, err := targets.LoadRecipe(recipeDir(class, "fixed"))
				if err != nil {
					t.Fatal(err)
				}
				m := action.DefaultModel()
				m.Clients = clients
				m.FaultKinds = []action.Fault{action.FaultPauseLong, action.FaultCrash}
				if class == "rw-leases" {
					m.TTLs = []time.Duration{10 * time.Second, 3 * time.Second}
					m.FaultKinds = []action.Fault{action.FaultPauseShort}
				}
				if clients == 3 || race.Enabled {
					// Seconds, not minutes: a crash only. The runs with
					// every fault are in results/explore/recipes.md (and
					// the pause past the lease, with two clients, in the
					// full run without -race).
					m.FaultKinds = []action.Fault{action.FaultCrash}
				}
				res, broken := search(t, b.Client, tg, m, sched.Options{Workers: 2})
				// holder-id names keys after its tokens and release
				// calls: their values are the same in every replay.
				if len(broken) > 0 || !res.Exhaustive || res.Schedules == 0 || res.Diverged > 0 {
					t.Errorf(
						"broken %v, exhaustive %v, %d schedules, %d diverged; want nothing "+
							"broken, exhaustively",
						broken, res.Exhaustive, res.Schedules, res.Diverged,
					)
				}
			})
		}
	}
}

// TestRecipeLeasesAlike: the read-write lock of rw-leases/broken keeps
// mutual exclusion while every client has the same lease.
func TestRecipeLeasesAlike(t *testing.T) {
	// an exhaustive search of three clients: the full run has it
	redistest.SkipShort(t, redistest.NeedServer)
	b := redistest.Real(t)
	tg, err := targets.LoadRecipe(recipeDir("rw-leases", "broken"))
	if err != nil {
		t.Fatal(err)
	}
	m := action.DefaultModel()
	m.Clients = 3
	if race.Enabled {
		m.Clients = 2 // three in the full run without -race
	}
	m.FaultKinds = []action.Fault{action.FaultPauseShort}
	m.Ticks = 1 // enough for the different leases to break it (TestRecipeExamplesBroken)
	res, broken := search(t, b.Client, tg, m, sched.Options{Workers: 2})
	if len(broken) > 0 || !res.Exhaustive {
		t.Errorf("with one lease for all: broken %v, exhaustive %v", broken, res.Exhaustive)
	}
}
