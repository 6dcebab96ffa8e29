package targets_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/explore/view"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// small is a model whose exhaustive search takes a fraction of a second:
// two clients, one attempt, one advance of the clock, a crash.
func small() action.Model {
	m := action.DefaultModel()
	m.Clients, m.FaultKinds, m.Ticks, m.Attempts = 2, []action.Fault{action.FaultCrash}, 1, 1
	return m
}

// setLock is a manifest of a lock taken with SET NX PX and released by a
// check of its token; acquireOK and releaseOK are its ok lists.
func setLock(acquireOK, releaseOK string) string {
	return `{"ops": {
  "acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "PX", "${ttl}"]}], ` +
		`"ok": ` + acquireOK + `},
  "release": {"steps": [{"cmd": ["GET", "${lock}"], "save": "v"},
    {"cmd": ["DEL", "${lock}"], "if": {"eq": ["${v}", "${token}"]}}], "ok": ` + releaseOK + `}}}`
}

// TestVacuous: a search of a manifest whose acquire's ok never matches
// (no client ever holds the lock), or whose release's ok never matches,
// finds nothing and proves nothing: Vacuous names the op and its ok. The
// same lock with the right oks is judged, and its counts say what
// happened, in the result and its JSON.
func TestVacuous(t *testing.T) {
	b := redistest.Real(t)
	for _, tc := range []struct {
		name, manifest, want string
	}{
		{"acquire never ok", setLock(`[1]`, `[1]`), "ops.acquire.ok [1] matched none of its"},
		{"release never " +
			"ok", setLock(`["OK"]`, `["1"]`), `ops.release.ok ["1"] matched none of its`},
		{"right", setLock(`["OK"]`, `[1]`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := targets.LoadRecipe(writeRecipe(t, tc.manifest, nil))
			if err != nil {
				t.Fatal(err)
			}
			res, broken := search(t, b.Client, tg, small(), sched.Options{})
			if len(broken) > 0 || !res.Exhaustive {
				t.Fatalf(
					"broken %v, exhaustive %v; want nothing broken, exhaustively", broken,
					res.Exhaustive,
				)
			}
			err = res.Vacuous()
			var doc struct {
				Held    *int             `json:"schedules_with_holder"`
				Ops     []result.OpCount `json:"ops"`
				Vacuous string           `json:"vacuous"`
			}
			if b, jerr := json.Marshal(res); jerr != nil || json.Unmarshal(b, &doc) != nil ||
				doc.Held == nil ||
				len(doc.Ops) != 2 {
				t.Fatalf("JSON %+v (%v): want schedules_with_holder and two ops", doc, jerr)
			}
			if tc.want == "" {
				if err != nil || res.Held == 0 || res.Ops[0].Succeeded == 0 ||
					res.Ops[1].Succeeded == 0 ||
					doc.Vacuous != "" {
					t.Errorf(
						"vacuous %v, %d held, ops %+v; want a verdict, holders, each op succeeding",
						err, res.Held, res.Ops,
					)
				}
				return
			}
			if !errors.Is(err, result.ErrVacuous) || !strings.Contains(err.Error(), tc.want) ||
				!strings.HasPrefix(doc.Vacuous, tc.want[:strings.Index(tc.want, " matched")]) {
				t.Errorf(
					"vacuous %v, JSON %q; want ErrVacuous naming %q", err, doc.Vacuous, tc.want,
				)
			}
			var text strings.Builder
			view.WriteFindings(&text, res, false)
			if strings.Contains(text.String(), "No violation") ||
				!strings.Contains(text.String(), "No verdict: ") {
				t.Errorf("the report says %q; want no verdict", text.String())
			}
		})
	}
}

// TestKeyOutside: a key made from a saved reply that lies outside the
// explored namespace is an error naming it, before it is sent.
func TestKeyOutside(t *testing.T) {
	b := redistest.Real(t)
	tg, err := targets.LoadRecipe(writeRecipe(t, `{"ops": {
  "acquire": {"steps": [{"cmd": ["ECHO", "elsewhere"], "save": "k"},
    {"cmd": ["SET", "${k}", "${token}", "NX", "PX", "${ttl}"]}], "ok": ["OK"]},
  "release": {"steps": [{"cmd": ["DEL", "${lock}"]}], "ok": [1]}}}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	e, err := sched.NewExplorer(t.Context(), b.Client, tg, small())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = e.Explore(t.Context(), sched.Options{})
	if !errors.Is(err, targets.ErrKeyOutside) ||
		!strings.Contains(err.Error(), `ops.acquire.steps[1] (SET): key "elsewhere"`) {
		t.Errorf("got %v; want ErrKeyOutside naming the key", err)
	}
	if n, err := b.Client.Exists(t.Context(), "elsewhere").Result(); err != nil || n != 0 {
		t.Errorf("the key outside exists (%d, %v): the command was sent", n, err)
	}
}

// leaseLock is a manifest in ttl_unit unit whose acquire sets the lease
// with acquire (a SET option: PX or EX) and whose extend renews it with
// extend (PEXPIRE or EXPIRE, given ARGV[2]; "add" for PEXPIRE of what is
// left plus ARGV[2]), as a script.
func leaseLock(unit, acquire, extend string) (string, map[string]string) {
	call := `redis.call('` + extend + `', KEYS[1], ARGV[2])`
	if extend == "add" {
		call = `redis.call('PEXPIRE', KEYS[1], redis.call('PTTL', KEYS[1]) + ARGV[2])`
	}
	return `{"ttl_unit": "` + unit + `", "ops": {
  "acquire": {"steps": [{"cmd": ["SET", "${lock}", "${token}", "NX", "` + acquire + `", ` +
			`"${ttl}"]}], "ok": ["OK"]},
  "release": {"script": "release.lua", "keys": ["${lock}"], "args": ["${token}"], "ok": [1]},
  "extend": {"script": "extend.lua", "keys": ["${lock}"], "args": ["${token}", "${ttl}"], "ok": ` +
			`[1]}}}`,
		map[string]string{
			"release.lua": `if redis.call('GET', ` +
				`KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`,
			"extend.lua": `if redis.call('GET', KEYS[1]) == ARGV[1] then return ` + call + ` end
return 0`,
		}
}

// TestLeaseProperty: an extension that hands EXPIRE the lease in
// milliseconds keeps the lock 1,000 times longer than its holder asked:
// the lease property finds it (and only it), at the extension. The same
// lock in the right units keeps it, as does one whose lease is shorter
// than asked, and one whose extension adds a lease to what is left (after
// an advance of the clock: the retry of the client refused).
func TestLeaseProperty(t *testing.T) {
	b := redistest.Real(t)
	for _, tc := range []struct {
		name, unit, acquire, extend string
		broken                      bool
	}{
		{"EXPIRE given ms", "ms", "PX", "EXPIRE", true},
		{"SET EX given ms", "ms", "EX", "PEXPIRE", true},
		{"PEXPIRE given ms", "ms", "PX", "PEXPIRE", false},
		{"EXPIRE given s", "s", "EX", "EXPIRE", false},
		{"PEXPIRE given s (shorter)", "s", "EX", "PEXPIRE", false},
		{"a lease added to what is left", "ms", "PX", "add", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest, files := leaseLock(tc.unit, tc.acquire, tc.extend)
			tg, err := targets.LoadRecipe(writeRecipe(t, manifest, files))
			if err != nil {
				t.Fatal(err)
			}
			m := small()
			m.FaultKinds, m.Ticks = []action.Fault{action.FaultPauseShort}, 2
			res, broken := search(
				t, b.Client, tg, m, sched.Options{Check: []string{result.Lease}},
			)
			if !tc.broken {
				if len(broken) > 0 || !res.Exhaustive {
					t.Errorf(
						"broken %v, exhaustive %v; want the lease kept, exhaustively", broken,
						res.Exhaustive,
					)
				}
				return
			}
			if len(res.Violations) != 1 || broken[0] != result.Lease ||
				!res.Violations[0].Reproduced ||
				!strings.Contains(res.Violations[0].Message, "longer than the longest lease a "+
					"client asked for (10s)") {
				t.Fatalf("violations %+v; want the lease broken, reproduced", res.Violations)
			}
		})
	}
}

// TestReplayNotFinished: a violation whose replay on a fresh server cannot
// finish (here: its bound is a nanosecond) stays a violation, said not
// replayed, and is never filed as unsteady. It changes ReplayBound: not
// parallel.
func TestReplayNotFinished(t *testing.T) {
	b := redistest.Real(t)
	defer func(d time.Duration) { sched.ReplayBound = d }(sched.ReplayBound)
	sched.ReplayBound = time.Nanosecond
	manifest, files := leaseLock("ms", "PX", "EXPIRE")
	tg, err := targets.LoadRecipe(writeRecipe(t, manifest, files))
	if err != nil {
		t.Fatal(err)
	}
	res, _ := search(t, b.Client, tg, small(), sched.Options{StopAtFirst: true})
	if len(res.Violations) != 1 || len(res.Unsteady) != 0 {
		t.Fatalf("violations %+v, unsteady %+v; want one violation", res.Violations, res.Unsteady)
	}
	f := res.Violations[0]
	if !f.NotReplayed || f.Reproduced ||
		!strings.HasPrefix(f.ReplayNote, "not replayed: the replay took longer than its bound") {
		t.Errorf(
			"not replayed %v, reproduced %v, note %q; want not replayed, naming its bound",
			f.NotReplayed, f.Reproduced, f.ReplayNote,
		)
	}
}
