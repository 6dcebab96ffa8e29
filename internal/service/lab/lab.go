// Package lab runs the service's lab (POST /api/lab/runs): one scenario,
// recorded step by step, beside its fix. The HTTP service reaches it
// through a small interface of its own, so that it depends neither on the
// gallery nor on the fault runs, which start and stop redis-server
// processes.
package lab

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/faults"
	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	"github.com/lockmarket/lockmarket/internal/flawed"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/timeline"
)

// The lab runs one scenario on the server, recorded step by step, beside
// its fix: a gallery recipe, flawed then fixed, in a fresh market of its
// own on the service's Redis (on an embedded server of its own when the
// service's is miniredis, see env); or the pause fault under a strategy,
// then under the fenced lock that fixes it, each one schedule on the
// explorer's virtual clock (pause.go).

// Bounds of the lab.
const (
	labKeep    = 16               // finished runs kept for GET
	labTimeout = 30 * time.Second // a run that takes longer is stopped
)

// Kinds of lab runs.
const (
	labRecipe = "recipe"
	labFault  = "fault"
)

// steps is tl read step by step, as a lab run's variant gives it.
func steps(tl timeline.Timeline) []api.LabStep {
	var out []api.LabStep
	for _, s := range tl.Steps(false) {
		out = append(out, api.LabStep{Seq: s.Seq, Client: s.Client, AtMS: latency.Milliseconds(s.At), Kind: s.Kind,
			Text: s.Text, Times: s.Times, Violation: s.Violation})
	}
	return out
}

// Runner runs one lab run at a time in the background and keeps the last
// ones; Close stops it.
type Runner struct {
	rdb  redis.UniversalClient
	mini *miniredis.Miniredis
	log  *slog.Logger

	ctx      context.Context // ends when the runner closes
	closeAll context.CancelFunc
	wg       sync.WaitGroup

	mu      sync.Mutex
	running bool
	runs    []*api.LabRun // newest last
	// variants counts the variants run, by name and verdict (metrics.go).
	variants map[variantKey]int
}

// New returns a Runner whose recipes run in fresh markets on rdb; mini is
// the embedded server when rdb talks to miniredis (required then: its keys
// expire only when its clock is moved, which the lab does to make a lease
// run out). log receives the start and failures of runs (nil: discard).
func New(rdb redis.UniversalClient, mini *miniredis.Miniredis, log *slog.Logger) *Runner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{rdb: rdb, mini: mini, log: log, ctx: ctx, closeAll: cancel}
}

// Close stops the running lab run and waits for it to end. Start is
// refused after Close.
func (l *Runner) Close() {
	l.closeAll()
	l.wg.Wait()
}

// Run returns the lab run id, if it is one of the last kept.
func (l *Runner) Run(id string) (api.LabRun, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.runs {
		if r.ID == id {
			c := *r
			c.Runs = slices.Clone(r.Runs)
			return c, true
		}
	}
	return api.LabRun{}, false
}

// Scenarios is what the lab can run (GET /api/lab/scenarios).
func (l *Runner) Scenarios() api.LabScenarios {
	var recipes []api.LabRecipe
	for _, sc := range gallery.Scenarios() {
		recipes = append(recipes, api.LabRecipe{Recipe: sc.Recipe.ID, Name: sc.Recipe.Name, Fault: sc.Fault,
			Consequence: sc.Consequence, FixedBy: sc.FixedBy})
	}
	var strategies []string
	for _, v := range faults.Pause.Variants() {
		strategies = append(strategies, string(v))
	}
	return api.LabScenarios{
		Faults: []api.LabFault{{Fault: string(faults.Pause), Description: pauseDescription,
			Strategies: strategies, Available: true}},
		Recipes: recipes,
	}
}

// labFix is the variant that fixes v under the pause fault: the fenced
// lock, or "" when v is already safe.
func labFix(v faults.Variant) faults.Variant {
	switch v {
	case "coarse":
		return "coarse" + faults.FencedSuffix
	case "fine", "fine" + faults.WatchdogSuffix:
		return "fine" + faults.FencedSuffix
	}
	return ""
}

// Start starts the lab run req asks for in the background and returns
// it; Run(run.ID) follows it. It fails with an error wrapping
// api.ErrInvalid when req names no run the lab has, api.ErrBusy while
// another run is running and api.ErrClosed after Close.
func (l *Runner) Start(req api.LabRequest) (api.LabRun, error) {
	run := api.LabRun{ID: api.NewID(), State: api.StateRunning}
	var sc gallery.Scenario
	var v faults.Variant
	switch {
	case req.Recipe != nil && (req.Fault != nil || req.Strategy != nil):
		return api.LabRun{}, api.Invalidf("give either recipe, or fault and strategy, not both")
	case req.Recipe != nil:
		var err error
		if sc, err = gallery.ScenarioOf(*req.Recipe); err != nil {
			return api.LabRun{}, api.Invalidf("recipe %q: want one of %s", *req.Recipe, strings.Join(flawed.RecipeIDs(), ", "))
		}
		run.Kind, run.Recipe, run.Description = labRecipe, sc.Recipe.String(), sc.Fault
		run.Runs = []api.LabVariant{{Name: gallery.Variant(false), State: api.StatePending},
			{Name: gallery.Variant(true), State: api.StatePending}}
	case req.Fault != nil || req.Strategy != nil:
		for _, f := range []struct {
			name string
			v    *string
		}{{"fault", req.Fault}, {"strategy", req.Strategy}} {
			if f.v == nil {
				return api.LabRun{}, api.Invalidf("field %q is required", f.name)
			}
		}
		if *req.Fault != string(faults.Pause) {
			return api.LabRun{}, api.Invalidf("fault %q: the lab runs %q", *req.Fault, faults.Pause)
		}
		v = faults.Variant(*req.Strategy)
		if !slices.Contains(faults.Pause.Variants(), v) {
			return api.LabRun{}, api.Invalidf("strategy %q does not run under %s: want one of %v", v, faults.Pause, faults.Pause.Variants())
		}
		run.Kind, run.Fault, run.Strategy, run.Description = labFault, *req.Fault, string(v), pauseDescription
		run.Runs = []api.LabVariant{{Name: string(v), State: api.StatePending}}
		if fix := labFix(v); fix != "" {
			run.Runs = append(run.Runs, api.LabVariant{Name: string(fix), State: api.StatePending})
		}
	default:
		return api.LabRun{}, api.Invalidf("give recipe, or fault and strategy")
	}

	l.mu.Lock()
	if l.running {
		l.mu.Unlock()
		return api.LabRun{}, api.ErrBusy
	}
	if l.ctx.Err() != nil {
		l.mu.Unlock()
		return api.LabRun{}, api.ErrClosed
	}
	l.running = true
	l.runs = append(l.runs, &run)
	if len(l.runs) > labKeep {
		l.runs = slices.Delete(l.runs, 0, len(l.runs)-labKeep)
	}
	l.wg.Add(1)
	answer := run
	answer.Runs = slices.Clone(run.Runs)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(l.ctx, labTimeout)
		defer cancel()
		l.run(ctx, &run, sc, v)
	}()
	l.log.Info("lab run started", slog.String("id", run.ID), slog.String("kind", run.Kind))
	return answer, nil
}

// run runs each variant of a lab run in turn.
func (l *Runner) run(ctx context.Context, run *api.LabRun, sc gallery.Scenario, v faults.Variant) {
	start := time.Now()
	set := func(f func()) {
		l.mu.Lock()
		defer l.mu.Unlock()
		f()
		run.ElapsedMS = latency.Milliseconds(time.Since(start))
	}
	state, failure := api.StateDone, ""
	// Faults, and the recipes scheduledRecipe names, are schedules on the
	// explorer's virtual clock; the other recipes run in real time.
	_, scheduled := scheduledRecipe(sc.Recipe.ID, false)
	virtual := run.Kind == labFault || scheduled
	var env gallery.Env
	if run.Kind == labRecipe && !virtual {
		var closeEnv func()
		var err error
		env, closeEnv, err = l.env()
		if err != nil {
			l.log.Warn("lab run failed", slog.String("id", run.ID), slog.Any("err", err))
			set(func() { run.State, run.Error, l.running = api.StateFailed, err.Error(), false })
			return
		}
		defer closeEnv()
	}
	for i := range run.Runs {
		set(func() { run.Runs[i].State = api.StateRunning })
		var tl timeline.Timeline
		var err error
		switch {
		case run.Kind == labRecipe && virtual:
			t, _ := scheduledRecipe(sc.Recipe.ID, i == 1)
			tl, err = runScheduledRecipe(ctx, sc, t, i == 1)
		case run.Kind == labRecipe:
			tl, err = sc.RunOne(ctx, env, i == 1)
		default:
			tl, err = runPause(ctx, faults.Variant(run.Runs[i].Name))
		}
		if err != nil {
			l.log.Warn("lab run failed", slog.String("id", run.ID), slog.Any("err", err))
			set(func() {
				run.Runs[i].State = api.StateFailed
				l.count(run.Runs[i].Name, verdictFailed)
			})
			state, failure = api.StateFailed, err.Error()
			break
		}
		set(func() {
			run.Runs[i].State = api.StateDone
			run.Runs[i].Timeline = &tl
			run.Runs[i].Steps = steps(tl)
			run.Runs[i].Verdict = labVerdict(tl)
			run.Runs[i].Violations = tl.Violations
			run.Runs[i].VirtualClock = virtual
			l.count(run.Runs[i].Name, verdictOf(tl.Violations))
		})
	}
	set(func() {
		run.State, run.Error = state, failure
		l.running = false
	})
}

// labVerdict is the timeline's verdict and, when a step broke mutual
// exclusion, which one.
func labVerdict(tl timeline.Timeline) string {
	v := tl.Verdict
	for _, e := range tl.Marked() {
		if e.Kind != timeline.Finding {
			return fmt.Sprintf("%s The unsafe step: %s %s (at %.1f ms).", v, e.Client, e.Violation,
				float64(e.At)/float64(time.Millisecond))
		}
	}
	return v
}
