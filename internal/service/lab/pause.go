package lab

import (
	"context"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/step"
	"github.com/lockmarket/lockmarket/internal/explore/targets"

	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockmarket/lockmarket/internal/failure/faults"
	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	"github.com/lockmarket/lockmarket/internal/timeline"
	"github.com/lockmarket/lockmarket/market"
	"github.com/redis/go-redis/v9"
)

// The pause fault in the lab is one schedule on the explorer's runtime
// (package explore): its controlled scheduler and virtual clock, on an
// embedded miniredis of the run's own. A buys the sword: she takes the
// lock and reads; just before her commit she is paused (her whole
// process, a watchdog with it) for one and a half leases, so her lease
// runs out on the virtual clock; B buys the same sword from start to
// end; then A goes on and commits. What runs when is the schedule's
// choice, never the machine's speed, so a busy server shows the same
// failure and the same fix, step for step, every time.
//
// The strategies run the market's List and Purchase (explore.Strategy);
// fine+watchdog runs the explorer's watchdog target, locking.Mutex
// renewed by locking.KeepAlive around a read and a write of a counter
// (explore.Watchdog): the market has no watchdog of its own.

// pauseLease is the lease in the pause runs, in virtual time: it costs no
// real time, so it is the market's default.
const pauseLease = 10 * time.Second

// pauseEpoch is the embedded server's clock in a pause run (its stream
// IDs, such as a sale's receipt, follow it): fixed, so that two runs of
// one scenario answer alike. The virtual clock, not this one, ends leases.
var pauseEpoch = time.Date(2025, time.January, 1, 12, 0, 0, 0, time.UTC)

// pauseDescription says what a pause run injects.
const pauseDescription = "holder A paused before her commit, past her lease (her whole process, a watchdog " +
	"with it), while B buys the same item; a schedule on the explorer's virtual clock"

// errSchedule is returned when a pause run's schedule cannot be played:
// a step it needs is not enabled at its turn.
var errSchedule = errors.New("lab: the pause schedule cannot be played")

// pauseTarget is the explorer's target of variant v.
func pauseTarget(v faults.Variant) (*sched.Target, error) {
	name := string(v)
	if name == "fine"+faults.WatchdogSuffix {
		return targets.Watchdog(false), nil
	}
	name, fenced := strings.CutSuffix(name, faults.FencedSuffix)
	s, err := market.ParseStrategy(name)
	if err != nil {
		return nil, err
	}
	return targets.Strategy(s, fenced)
}

// commits reports whether command is a client's write: the market's
// transaction or script, or the counter's SET.
func commits(command string) bool {
	for _, p := range []string{"MULTI", "EVAL script", "SET counter"} {
		if strings.HasPrefix(command, p) {
			return true
		}
	}
	return false
}

// pausePlan is the schedule of a pause run, played on e up to B's end;
// what follows (A's commit and release) is the first enabled command or
// tick at each step, as explore.Explorer.Record plays it.
func pausePlan(ctx context.Context, e *sched.Explorer) ([]action.Action, error) {
	var plan []action.Action
	// take appends the first enabled action that ok accepts, and reports
	// whether there was one.
	take := func(ok func(action.Action) bool) (bool, error) {
		snap, err := step.Cut(ctx, e, plan)
		if err != nil {
			return false, err
		}
		for _, a := range snap.Enabled {
			if ok(a) {
				plan = append(plan, a)
				return true, nil
			}
		}
		return false, nil
	}
	must := func(what string, ok func(action.Action) bool) error {
		found, err := take(ok)
		if err == nil && !found {
			err = fmt.Errorf("%w: %s is not enabled after %d steps", errSchedule, what, len(plan))
		}
		return err
	}
	of := func(client, kind string) func(action.Action) bool {
		return func(a action.Action) bool { return a.Client == client && a.Kind == kind }
	}
	const most = 20 // commands of one client before its commit, or in all
	if err := must("A's start", of("A", action.Start)); err != nil {
		return nil, err
	}
	for range most {
		found, err := take(func(a action.Action) bool {
			return a.Client == "A" && a.Kind == action.Run && !commits(a.Command)
		})
		if err != nil {
			return nil, err
		}
		if !found {
			break
		}
	}
	if err := must("A's pause", func(a action.Action) bool {
		return a.Client == "A" && a.Kind == action.Pause && a.Length == action.Long
	}); err != nil {
		return nil, err
	}
	if err := must("the clock's advance", func(a action.Action) bool { return a.Kind == action.Tick }); err != nil {
		return nil, err
	}
	if err := must("B's start", of("B", action.Start)); err != nil {
		return nil, err
	}
	for range most {
		found, err := take(of("B", action.Run))
		if err != nil {
			return nil, err
		}
		if !found {
			break
		}
	}
	return plan, nil
}

// pauseSchedules is each target's pause schedule, by the target's name,
// as pausePlan finds it: finding it replays the schedule from the start
// once per step, so the lab keeps it as data and a run replays it once,
// to record it, which keeps a run short on a busy server.
// TestPauseSchedules checks that each is what pausePlan finds; after a
// change of the market or the explorer that moves one,
// `go test -run TestPauseSchedules ./internal/service/lab/ -update`
// writes them again.
//
//go:embed pause_schedules.json
var pauseSchedules []byte

// schedules is pauseSchedules read.
var schedules = sync.OnceValues(func() (map[string][]action.Action, error) {
	var m map[string][]action.Action
	err := json.Unmarshal(pauseSchedules, &m)
	return m, err
})

// scheduleOf is the pause schedule of e's target: the one kept, or, for a
// target that has none kept, the one pausePlan finds.
func scheduleOf(ctx context.Context, e *sched.Explorer) ([]action.Action, error) {
	m, err := schedules()
	if err != nil {
		return nil, err
	}
	if p, ok := m[e.Target().Name]; ok {
		return p, nil
	}
	return pausePlan(ctx, e)
}

// runPause plays the pause schedule of variant v and returns its
// timeline, tokens and keys named alike in every run.
func runPause(ctx context.Context, v faults.Variant) (timeline.Timeline, error) {
	t, err := pauseTarget(v)
	if err != nil {
		return timeline.Timeline{}, err
	}
	tl, violations, err := playPause(ctx, t)
	if err != nil {
		return timeline.Timeline{}, err
	}
	tl.Variant = string(v)
	tl.Verdict = pauseVerdict(v, violations)
	return tl, nil
}

// playPause plays the pause schedule on target t and returns its
// timeline, tokens and keys named alike in every run, and the violations
// found.
func playPause(
	ctx context.Context, t *sched.Target,
) (timeline.Timeline, []result.Violation, error) {
	mini, err := miniredis.Run()
	if err != nil {
		return timeline.Timeline{}, nil, err
	}
	defer mini.Close()
	mini.SetTime(pauseEpoch)
	rdb := redis.NewClient(&redis.Options{Addr: mini.Addr(), PoolSize: 2})
	defer rdb.Close()
	m := action.DefaultModel()
	m.Clients, m.TTL = 2, pauseLease
	e, err := sched.NewExplorer(ctx, rdb, t, m)
	if err != nil {
		return timeline.Timeline{}, nil, err
	}
	defer e.Close()
	plan, err := scheduleOf(ctx, e)
	if err != nil {
		return timeline.Timeline{}, nil, err
	}
	tl, violations, err := e.Record(ctx, plan)
	if err != nil {
		return timeline.Timeline{}, nil, err
	}
	tl = named(tl, e.Prefix())
	// The recording ends with its last event, on the virtual clock.
	tl.End = 0
	for _, ev := range tl.Events {
		tl.End = max(tl.End, ev.At)
	}
	return tl, violations, nil
}

// scheduledRecipe is the explorer's target of recipe id when the lab
// plays it as the pause schedule, or its fix: recipe 6, locking.Mutex,
// is the market's own fine lock, and its fix the same lock with
// market.WithFencing. The other recipes run in the gallery.
func scheduledRecipe(id string, fixed bool) (*sched.Target, bool) {
	if id != "6" {
		return nil, false
	}
	t, err := targets.Strategy(market.Fine, fixed)
	return t, err == nil
}

// runScheduledRecipe plays scenario sc (flawed, or fixed) on target t,
// the pause schedule.
func runScheduledRecipe(ctx context.Context, sc gallery.Scenario, t *sched.Target, fixed bool) (timeline.Timeline, error) {
	tl, violations, err := playPause(ctx, t)
	if err != nil {
		return timeline.Timeline{}, err
	}
	tl.Title, tl.Variant = sc.Title(), gallery.Variant(fixed)
	tl.Verdict = sc.Verdict(fixed, len(violations)) + " Times are virtual."
	return tl, nil
}

// pauseVerdict says in words what a pause run showed.
func pauseVerdict(v faults.Variant, violations []result.Violation) string {
	if len(violations) == 0 {
		if strings.HasSuffix(string(v), faults.FencedSuffix) {
			return "No violation: A's late commit was refused (the fence: her lock was lost). Times are virtual."
		}
		return "No violation: A's late commit found the item sold and changed nothing. Times are virtual."
	}
	var ps []string
	for _, x := range violations {
		ps = append(ps, x.Property+": "+x.Message)
	}
	return "Broken: " + strings.Join(ps, "; ") + ". Times are virtual."
}

// uuidPattern matches the lock tokens the code under test makes.
var uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// named returns tl with each lock token (random, new in every run)
// replaced by its name, the client that sent it first and a number (A#1),
// whole or as the timeline abbreviates it, and the explorer's namespace
// (random too) left out of keys: two runs of one schedule then read alike.
func named(tl timeline.Timeline, prefix string) timeline.Timeline {
	count := map[string]int{}
	seen := map[string]bool{}
	pairs := []string{prefix, ""}
	for _, ev := range tl.Events {
		for _, s := range append([]string{ev.Detail, ev.Value}, ev.Args...) {
			for _, tok := range uuidPattern.FindAllString(s, -1) {
				if seen[tok] {
					continue
				}
				seen[tok] = true
				count[ev.Client]++
				name := fmt.Sprintf("%s#%d", ev.Client, count[ev.Client])
				pairs = append(pairs, tok, name, tok[:8]+"…", name)
			}
		}
	}
	r := strings.NewReplacer(pairs...)
	out := tl
	out.Events = make([]timeline.Event, len(tl.Events))
	for i, ev := range tl.Events {
		ev.Detail, ev.Key, ev.Value, ev.Err, ev.Violation = r.Replace(ev.Detail), r.Replace(ev.Key),
			r.Replace(ev.Value), r.Replace(ev.Err), r.Replace(ev.Violation)
		if ev.Args != nil {
			args := make([]string, len(ev.Args))
			for j, a := range ev.Args {
				args[j] = r.Replace(a)
			}
			ev.Args = args
		}
		out.Events[i] = ev
	}
	return out
}
