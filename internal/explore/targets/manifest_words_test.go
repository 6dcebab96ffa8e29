package targets_test

import (
	"context"
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
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestManifestWordErrors: each misuse of refused, reply, unheld, give_up
// and a placeholder's arithmetic is refused with ErrManifest and one line
// naming the field (and the limit, where there is one).
func TestManifestWordErrors(t *testing.T) {
	take := `"acquire": {"script": "acquire.lua", "ok": [1]}`
	mutex := func(ops string) string { return `{"ops": {` + ops + `}}` }
	release := func(op string) string { return mutex(take + `, "release": ` + op) }
	steps := `"steps": [{"cmd": ["GET", "${lock}"], "save": "v"}, {"cmd": ["DEL", "${lock}"]}]`
	for _, tc := range []struct{ name, manifest, want string }{
		{"refused not a list", release(`{"script": "acquire.lua", "ok": [1], "refused": "ERR"}`),
			"recipe.json: ops.release.refused: want a list of the errors"},
		{"refused empty", release(`{"script": "acquire.lua", "ok": [1], "refused": []}`),
			"recipe.json: ops.release.refused: want a list of the errors"},
		{"refused a string", release(`{"script": "acquire.lua", "ok": [1], "refused": ["ERR"]}`),
			"recipe.json: ops.release.refused[0]: want a JSON object"},
		{"refused an empty prefix", release(`{"script": "acquire.lua", "ok": [1], ` +
			`"refused": [{"error": " "}]}`), "recipe.json: ops.release.refused[0].error: empty"},
		{"refused an unknown field", release(`{"script": "acquire.lua", "ok": [1], ` +
			`"refused": [{"reply": "x"}]}`), "recipe.json: ops.release.refused[0].reply: unknown"},
		{"refused with ok any", release(`{"script": "acquire.lua", "ok": "any", ` +
			`"refused": [{"error": "NOT_OWNER"}]}`),
			`recipe.json: ops.release.refused: goes with a list of ok replies`},
		{"refused past the limit", release(`{"script": "acquire.lua", "ok": [1], "refused": [` +
			strings.Repeat(`{"error": "E"}, `, targets.MaxRefusals) + `{"error": "E"}]}`),
			"recipe.json: ops.release.refused: 17 refusals, more than the limit of 16"},
		{"reply with a script", release(`{"script": "acquire.lua", "ok": [1], "reply": "v"}`),
			"recipe.json: ops.release.reply: goes with steps"},
		{"reply no step saves", release(`{` + steps + `, "ok": [1], "reply": "w"}`),
			`recipe.json: ops.release.reply: "w": no step saves it (saved: v)`},
		{"reply not a string", release(`{` + steps + `, "ok": [1], "reply": 1}`),
			"recipe.json: ops.release.reply: want a string"},
		{"unheld on a take", mutex(`"acquire": {"script": "acquire.lua", "ok": [1], ` +
			`"unheld": true}, "release": {"script": "acquire.lua", "ok": [1]}`),
			"recipe.json: ops.acquire.unheld: is for a release or an extend"},
		{"unheld not a boolean", release(`{"script": "acquire.lua", "ok": [1], "unheld": "yes"}`),
			"recipe.json: ops.release.unheld: want true or false"},
		{"give_up judged", mutex(take + `, "release": {"script": "acquire.lua", "ok": [1]}, ` +
			`"give_up": {"script": "acquire.lua", "ok": [1]}`),
			"recipe.json: ops.give_up.ok: give_up's reply is not judged"},
		{"give_up refused", mutex(take + `, "release": {"script": "acquire.lua", "ok": [1]}, ` +
			`"give_up": {"script": "acquire.lua", "refused": [{"error": "E"}]}`),
			"recipe.json: ops.give_up: give_up's reply is not judged"},
		{"give_up alone", mutex(`"give_up": {"script": "acquire.lua"}`),
			"recipe.json: ops.acquire: missing: a mutex needs acquire, release"},
		{"arithmetic on a token", release(`{"script": "acquire.lua", "ok": [1], ` +
			`"args": ["${token+1}"]}`),
			"recipe.json: ops.release.args[0]: ${token+1}: ${token} is not a number"},
		{"arithmetic on an unknown name", release(`{"script": "acquire.lua", "ok": [1], ` +
			`"args": ["${now_ms+lease}"]}`),
			"recipe.json: ops.release.args[0]: ${now_ms+lease}: unknown placeholder ${lease}"},
		{"arithmetic without a name", release(`{"script": "acquire.lua", "ok": [1], ` +
			`"args": ["${1+2}"]}`),
			"recipe.json: ops.release.args[0]: ${1+2}: no placeholder"},
		{"arithmetic with a product", release(`{"script": "acquire.lua", "ok": [1], ` +
			`"args": ["${ttl*2}"]}`),
			`recipe.json: ops.release.args[0]: ${ttl*2}: "*": want + or - between terms`},
		{"arithmetic with a dangling sign", release(`{"script": "acquire.lua", "ok": [1], ` +
			`"args": ["${ttl-}"]}`), "recipe.json: ops.release.args[0]: ${ttl-}: want"},
		{"arithmetic past int64", release(`{"script": "acquire.lua", "ok": [1], ` +
			`"args": ["${ttl+99999999999999999999}"]}`),
			"recipe.json: ops.release.args[0]: ${ttl+99999999999999999999}: " +
				"99999999999999999999 is larger than the limit"},
		{"arithmetic past the terms' limit", release(`{"script": "acquire.lua", "ok": [1], ` +
			`"args": ["${ttl` + strings.Repeat("+1", targets.MaxExprTerms) + `}"]}`),
			"more than the limit of 8 terms"},
		{"arithmetic of a save before it is made", release(`{"steps": [{"cmd": ["GET", ` +
			`"${v+1}"]}, {"cmd": ["GET", "${lock}"], "save": "v"}], "ok": [1]}`),
			"recipe.json: ops.release.steps[0].cmd[1]: ${v+1}: unknown placeholder ${v}"},
		{"a key of arithmetic alone", release(`{"script": "acquire.lua", "ok": [1], ` +
			`"keys": ["${now_ms+1}"]}`),
			"recipe.json: ops.release.keys[0]: key \"${now_ms+1}\" is not made from ${lock}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"acquire.lua": "return 1"}
			_, err := targets.LoadRecipe(writeRecipe(t, tc.manifest, files))
			if !errors.Is(err, targets.ErrManifest) || !strings.Contains(err.Error(), tc.want) ||
				!strings.HasPrefix(err.Error(), "recipe.json: ") ||
				strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v; want ErrManifest, one line with %q", err, tc.want)
			}
		})
	}
}

// wordCases is each recipe of examples/recipes that shows a word of the
// manifest: the property its broken version breaks, with how many clients
// and which faults.
var wordCases = []struct {
	class    string
	property string
	clients  int
	faults   []action.Fault
}{
	{"refusal-by-error", result.Ownership, 2, []action.Fault{action.FaultPauseLong}},
	{"lease-arithmetic", result.Ownership, 2, []action.Fault{action.FaultPauseLong}},
	// a client that stops waiting stays ahead of the one that queued after it
	{"give-up", result.Liveness, 3, []action.Fault{action.FaultPauseShort}},
	{"unheld-release", result.Ownership, 2, []action.Fault{action.FaultPauseLong}},
}

// TestManifestWordsBroken: each broken recipe of a word breaks its
// property, with a counterexample a fresh redis-server reproduces.
func TestManifestWordsBroken(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	for _, tc := range wordCases {
		t.Run(tc.class, func(t *testing.T) {
			tg, err := targets.LoadRecipe(recipeDir(tc.class, "broken"))
			if err != nil {
				t.Fatal(err)
			}
			m := action.DefaultModel()
			m.Clients, m.FaultKinds = tc.clients, tc.faults
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
			t.Logf("%d schedules; %s in %d steps: %s", res.Schedules, f.Property, len(f.Steps),
				f.Message)
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

// TestManifestWordsFixed: each fixed recipe of a word, and the recipe of
// reply, keeps every property in every schedule with two clients, and
// every op succeeds somewhere (give_up runs).
func TestManifestWordsFixed(t *testing.T) {
	b := redistest.Real(t)
	dirs := []string{"reply-from-step"}
	for _, tc := range wordCases {
		dirs = append(dirs, filepath.Join(tc.class, "fixed"))
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			tg, err := targets.LoadRecipe(recipeDir(dir))
			if err != nil {
				t.Fatal(err)
			}
			res, broken := search(t, b.Client, tg, lean(), sched.Options{Workers: 2})
			if len(broken) > 0 || !res.Exhaustive || res.Schedules == 0 || res.Diverged > 0 ||
				res.Vacuous() != nil {
				t.Errorf("broken %v, exhaustive %v, %d schedules, %d diverged, vacuous %v; "+
					"want nothing broken, exhaustively", broken, res.Exhaustive, res.Schedules,
					res.Diverged, res.Vacuous())
			}
			for _, o := range res.Ops {
				if o.Succeeded == 0 {
					t.Errorf("%s never succeeded (%d calls)", o.Op, o.Calls)
				}
			}
		})
	}
}

// copyRecipe copies a recipe of examples/recipes into a directory of its
// own, its manifest edited by edit.
func copyRecipe(t *testing.T, dir string, edit func(string) string) string {
	t.Helper()
	files := map[string]string{}
	ents, err := os.ReadDir(recipeDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	var manifest string
	for _, e := range ents {
		b, err := os.ReadFile(recipeDir(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == targets.ManifestFile {
			manifest = edit(string(b))
			continue
		}
		files[e.Name()] = string(b)
	}
	return writeRecipe(t, manifest, files)
}

// TestManifestWordsMatter: without its word, each recipe says something
// else. A refusal by error is an error of the recipe; the latch's DEL,
// taken for the release's reply, makes every release a success, which
// ownership refutes; without give_up, the queue keeps who left it.
func TestManifestWordsMatter(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	noRefused := copyRecipe(t, filepath.Join("refusal-by-error", "fixed"), func(s string) string {
		return strings.ReplaceAll(s, `, "refused": [{"error": "LOCKED"}]`, "")
	})
	tg, err := targets.LoadRecipe(noRefused)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sched.NewExplorer(ctx, b.Client, tg, lean())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Explore(ctx, sched.Options{}); !errors.Is(err, sched.ErrTarget) ||
		!strings.Contains(err.Error(), "ops.acquire (acquire.lua) failed: LOCKED") {
		t.Errorf("a refusal by error without refused: %v; want an error of the target", err)
	}
	noReply := copyRecipe(t, "reply-from-step", func(s string) string {
		return strings.ReplaceAll(s, `"reply": "released", `, "")
	})
	if tg, err = targets.LoadRecipe(noReply); err != nil {
		t.Fatal(err)
	}
	if _, broken := search(t, b.Client, tg, lean(), sched.Options{
		Stop: []string{result.Ownership},
	}); !slices.Contains(broken, result.Ownership) {
		t.Errorf("the latch's DEL as the release's reply: broken %v; want ownership", broken)
	}
}

// TestManifestUnheldMessages: a release run by a client that holds
// nothing breaks ownership when it deletes another's lock, and when it
// answers a success.
func TestManifestUnheldMessages(t *testing.T) {
	b := redistest.Real(t)
	claims := writeRecipe(t, `{"ops": {
  "acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "PX", "${ttl}"]}],
    "ok": ["OK"]},
  "release": {"script": "release.lua", "keys": ["${lock}"], "args": ["${token}"], "ok": [1],
    "unheld": true}}}`, map[string]string{"release.lua": `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`})
	for _, tc := range []struct{ name, dir, want string }{
		{"deletes", recipeDir("unheld-release", "broken"),
			"B's ops.release, run holding nothing (its take was refused), deleted lock:L, " +
				"which A held"},
		{"claims", claims, "B's ops.release (release.lua) answered 1, a success, but B held " +
			"nothing (its take was refused)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := targets.LoadRecipe(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			m := action.DefaultModel()
			m.FaultKinds = nil
			res, _ := search(t, b.Client, tg, m, sched.Options{Stop: []string{result.Ownership}})
			i := slices.IndexFunc(res.Violations, func(f result.Counterexample) bool {
				return f.Property == result.Ownership
			})
			if i < 0 || !strings.Contains(res.Violations[i].Message, tc.want) {
				t.Errorf("violations %v; want ownership: %q", res.Violations, tc.want)
			}
		})
	}
}
