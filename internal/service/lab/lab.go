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
	"github.com/lockmarket/lockmarket/internal/failure/flawed"
	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/service/jobs"
	"github.com/lockmarket/lockmarket/internal/sim/latency"
	"github.com/lockmarket/lockmarket/internal/timeline"
)

// The lab runs one scenario on the server, recorded step by step, beside
// its fix: a gallery recipe, flawed then fixed, in a fresh market of its
// own on the service's Redis (on an embedded server of its own when the
// service's is miniredis, see env); or the pause fault under
// a strategy, then under the fenced lock that fixes it, on a private
// redis-server the run starts and stops.

// Bounds of the lab.
const (
	labKeep    = 16               // finished runs kept for GET
	labTimeout = 30 * time.Second // a run that takes longer is stopped
	// The pause fault in the lab: a short lease and pause, so a run takes
	// about a second.
	labLockTTL = 100 * time.Millisecond
	labPause   = 250 * time.Millisecond
)

// Kinds of lab runs.
const (
	labRecipe = "recipe"
	labFault  = "fault"
)

// Run is the answer of GET /api/lab/runs/:id.
type Run struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Kind     string `json:"kind"`
	Recipe   string `json:"recipe,omitempty"`
	Fault    string `json:"fault,omitempty"`
	Strategy string `json:"strategy,omitempty"`
	// Description says what is injected, in words.
	Description string `json:"description"`
	// Runs are the scenario and then its fix (none when the strategy is
	// already safe), each with its timeline once done.
	Runs      []Variant `json:"runs"`
	ElapsedMS float64   `json:"elapsed_ms"`
	Error     string    `json:"error,omitempty"`
}

type Variant struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Timeline is every event recorded; Steps the same read step by step
	// (timeline.Steps: no commands but those on a lock, each command with
	// its reply, repeats counted), as the page draws it.
	Timeline   *timeline.Timeline `json:"timeline,omitempty"`
	Steps      []Step             `json:"steps,omitempty"`
	Verdict    string             `json:"verdict,omitempty"`
	Violations int                `json:"violations"`
}

// Step is a timeline.Step as JSON.
type Step struct {
	Seq       int           `json:"seq"`
	Client    string        `json:"client"`
	AtMS      float64       `json:"at_ms"`
	Kind      timeline.Kind `json:"kind"`
	Text      string        `json:"text"`
	Times     int           `json:"times"`
	Violation string        `json:"violation,omitempty"`
}

func Steps(tl timeline.Timeline) []Step {
	var out []Step
	for _, s := range tl.Steps(false) {
		out = append(out, Step{s.Seq, s.Client, latency.Milliseconds(s.At), s.Kind, s.Text, s.Times, s.Violation})
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
	runs    []*Run // newest last
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

// Run returns the lab run id (a Run), if it is one of the last kept.
func (l *Runner) Run(id string) (any, bool) {
	r, ok := l.find(id)
	return r, ok
}

func (l *Runner) find(id string) (Run, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.runs {
		if r.ID == id {
			c := *r
			c.Runs = slices.Clone(r.Runs)
			return c, true
		}
	}
	return Run{}, false
}

// Scenarios is what the lab can run (GET /api/lab/scenarios).
func (l *Runner) Scenarios() any {
	type recipe struct {
		Recipe      string `json:"recipe"`
		Name        string `json:"name"`
		Fault       string `json:"fault"`
		Consequence string `json:"consequence"`
		FixedBy     string `json:"fixed_by"`
	}
	type fault struct {
		Fault       string   `json:"fault"`
		Description string   `json:"description"`
		Strategies  []string `json:"strategies"`
		Available   bool     `json:"available"`
	}
	var recipes []recipe
	for _, sc := range gallery.Scenarios() {
		recipes = append(recipes, recipe{sc.Recipe.ID, sc.Recipe.Name, sc.Fault, sc.Consequence, sc.FixedBy})
	}
	_, err := redisserver.Binary()
	var strategies []string
	for _, v := range faults.Pause.Variants() {
		strategies = append(strategies, string(v))
	}
	return map[string]any{
		"recipes": recipes,
		"faults":  []fault{{string(faults.Pause), faults.Pause.Describe(), strategies, err == nil}},
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

// Start starts the lab run req asks for in the background and returns its
// ID and the Run; Run(id) follows it. It fails with an error wrapping
// jobs.ErrInvalid when req names no run the lab has, jobs.ErrBusy while
// another run is running and jobs.ErrClosed after Close.
func (l *Runner) Start(req jobs.LabRequest) (string, any, error) {
	run := Run{ID: jobs.NewID(), State: jobs.StateRunning}
	var sc gallery.Scenario
	var v faults.Variant
	switch {
	case req.Recipe != nil && (req.Fault != nil || req.Strategy != nil):
		return "", nil, invalid("give either recipe, or fault and strategy, not both")
	case req.Recipe != nil:
		var err error
		if sc, err = gallery.ScenarioOf(*req.Recipe); err != nil {
			return "", nil, invalid("recipe %q: want one of %s", *req.Recipe, strings.Join(flawed.RecipeIDs(), ", "))
		}
		run.Kind, run.Recipe, run.Description = labRecipe, sc.Recipe.String(), sc.Fault
		run.Runs = []Variant{{Name: gallery.Variant(false), State: jobs.StatePending}, {Name: gallery.Variant(true), State: jobs.StatePending}}
	case req.Fault != nil || req.Strategy != nil:
		for _, f := range []struct {
			name string
			v    *string
		}{{"fault", req.Fault}, {"strategy", req.Strategy}} {
			if f.v == nil {
				return "", nil, invalid("field %q is required", f.name)
			}
		}
		if *req.Fault != string(faults.Pause) {
			return "", nil, invalid("fault %q: the lab runs %q", *req.Fault, faults.Pause)
		}
		v = faults.Variant(*req.Strategy)
		if !slices.Contains(faults.Pause.Variants(), v) {
			return "", nil, invalid("strategy %q does not run under %s: want one of %v", v, faults.Pause, faults.Pause.Variants())
		}
		if _, err := redisserver.Binary(); err != nil {
			return "", nil, invalid("the %s fault needs a redis-server binary on the server's PATH", faults.Pause)
		}
		run.Kind, run.Fault, run.Strategy, run.Description = labFault, *req.Fault, string(v), faults.Pause.Describe()
		run.Runs = []Variant{{Name: string(v), State: jobs.StatePending}}
		if fix := labFix(v); fix != "" {
			run.Runs = append(run.Runs, Variant{Name: string(fix), State: jobs.StatePending})
		}
	default:
		return "", nil, invalid("give recipe, or fault and strategy")
	}

	l.mu.Lock()
	if l.running {
		l.mu.Unlock()
		return "", nil, jobs.ErrBusy
	}
	if l.ctx.Err() != nil {
		l.mu.Unlock()
		return "", nil, jobs.ErrClosed
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
	return run.ID, answer, nil
}

// invalid is an error wrapping jobs.ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", jobs.ErrInvalid, fmt.Sprintf(format, args...))
}

// run runs each variant of a lab run in turn.
func (l *Runner) run(ctx context.Context, run *Run, sc gallery.Scenario, v faults.Variant) {
	start := time.Now()
	set := func(f func()) {
		l.mu.Lock()
		defer l.mu.Unlock()
		f()
		run.ElapsedMS = latency.Milliseconds(time.Since(start))
	}
	state, failure := jobs.StateDone, ""
	env, closeEnv, err := l.env()
	if err != nil {
		l.log.Warn("lab run failed", slog.String("id", run.ID), slog.Any("err", err))
		set(func() { run.State, run.Error, l.running = jobs.StateFailed, err.Error(), false })
		return
	}
	defer closeEnv()
	for i := range run.Runs {
		set(func() { run.Runs[i].State = jobs.StateRunning })
		var tl timeline.Timeline
		var err error
		if run.Kind == labRecipe {
			tl, err = sc.RunOne(ctx, env, i == 1)
		} else {
			tl, _, err = faults.Trace(ctx, faults.Pause, faults.Variant(run.Runs[i].Name),
				faults.Config{LockTTL: labLockTTL, Pause: labPause})
		}
		if err != nil {
			l.log.Warn("lab run failed", slog.String("id", run.ID), slog.Any("err", err))
			set(func() {
				run.Runs[i].State = jobs.StateFailed
				l.count(run.Runs[i].Name, verdictFailed)
			})
			state, failure = jobs.StateFailed, err.Error()
			break
		}
		set(func() {
			run.Runs[i].State = jobs.StateDone
			run.Runs[i].Timeline = &tl
			run.Runs[i].Steps = Steps(tl)
			run.Runs[i].Verdict = labVerdict(tl)
			run.Runs[i].Violations = tl.Violations
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
