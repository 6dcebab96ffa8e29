package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockmarket/lockmarket/internal/faults"
	"github.com/lockmarket/lockmarket/internal/gallery"
	"github.com/lockmarket/lockmarket/internal/latency"
	"github.com/lockmarket/lockmarket/internal/redisserver"
	"github.com/lockmarket/lockmarket/internal/timeline"
)

// The lab (POST /api/lab/runs) runs one scenario on the server, recorded
// step by step, beside its fix: a gallery recipe, flawed then fixed, in a
// fresh market of its own on the service's Redis (on an embedded server of
// its own when the service's is miniredis, see labEnv); or the pause fault under
// a strategy, then under the fenced lock that fixes it, on a private
// redis-server the run starts and stops.

// Bounds of the lab.
const (
	labKeep    = 16               // finished runs kept for GET
	labTimeout = 30 * time.Second // a run that takes longer is stopped
	// labBodyLimit bounds a lab request's body (a recipe, or a fault and
	// a strategy, is a few dozen bytes).
	labBodyLimit = 4 << 10
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

type labRequest struct {
	Recipe   *string `json:"recipe"`
	Fault    *string `json:"fault"`
	Strategy *string `json:"strategy"`
}

// labRun is the answer of GET /api/lab/runs/:id.
type labRun struct {
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
	Runs      []labVariant `json:"runs"`
	ElapsedMS float64      `json:"elapsed_ms"`
	Error     string       `json:"error,omitempty"`
}

type labVariant struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Timeline is every event recorded; Steps the same read step by step
	// (timeline.Steps: no commands but those on a lock, each command with
	// its reply, repeats counted), as the page draws it.
	Timeline   *timeline.Timeline `json:"timeline,omitempty"`
	Steps      []labStep          `json:"steps,omitempty"`
	Verdict    string             `json:"verdict,omitempty"`
	Violations int                `json:"violations"`
}

// labStep is a timeline.Step as JSON.
type labStep struct {
	Seq       int           `json:"seq"`
	Client    string        `json:"client"`
	AtMS      float64       `json:"at_ms"`
	Kind      timeline.Kind `json:"kind"`
	Text      string        `json:"text"`
	Times     int           `json:"times"`
	Violation string        `json:"violation,omitempty"`
}

func labSteps(tl timeline.Timeline) []labStep {
	var out []labStep
	for _, s := range tl.Steps(false) {
		out = append(out, labStep{s.Seq, s.Client, latency.Milliseconds(s.At), s.Kind, s.Text, s.Times, s.Violation})
	}
	return out
}

// labSlot holds the running lab run and the last finished ones.
type labSlot struct {
	mu      sync.Mutex
	running bool
	runs    []*labRun // newest last
}

func (l *labSlot) find(id string) (labRun, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.runs {
		if r.ID == id {
			c := *r
			c.Runs = slices.Clone(r.Runs)
			return c, true
		}
	}
	return labRun{}, false
}

// labScenarios is GET /api/lab/scenarios: what the lab can run.
func (s *Server) labScenarios(c echo.Context) error {
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
		n, name, _ := strings.Cut(sc.Recipe, " ")
		recipes = append(recipes, recipe{n, name, sc.Fault, sc.Consequence, sc.FixedBy})
	}
	_, err := redisserver.Binary()
	var strategies []string
	for _, v := range faults.Pause.Variants() {
		strategies = append(strategies, string(v))
	}
	return c.JSON(http.StatusOK, map[string]any{
		"recipes": recipes,
		"faults":  []fault{{string(faults.Pause), faults.Pause.Describe(), strategies, err == nil}},
	})
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

// startLab is POST /api/lab/runs: 202 and the run, which goes on in the
// background; GET /api/lab/runs/:id follows it.
func (s *Server) startLab(c echo.Context) error {
	var req labRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	run := labRun{ID: newRunID(), State: stateRunning}
	var sc gallery.Scenario
	var v faults.Variant
	switch {
	case req.Recipe != nil && (req.Fault != nil || req.Strategy != nil):
		return invalid("give either recipe, or fault and strategy, not both")
	case req.Recipe != nil:
		var known []string
		found := false
		for _, x := range gallery.Scenarios() {
			n, _, _ := strings.Cut(x.Recipe, " ")
			known = append(known, n)
			if n == *req.Recipe {
				sc, found = x, true
			}
		}
		if !found {
			return invalid("recipe %q: want one of %s", *req.Recipe, strings.Join(known, ", "))
		}
		run.Kind, run.Recipe, run.Description = labRecipe, sc.Recipe, sc.Fault
		run.Runs = []labVariant{{Name: gallery.Variant(false), State: statePending}, {Name: gallery.Variant(true), State: statePending}}
	case req.Fault != nil || req.Strategy != nil:
		if err := missing(str("fault", req.Fault), str("strategy", req.Strategy)); err != nil {
			return err
		}
		if *req.Fault != string(faults.Pause) {
			return invalid("fault %q: the lab runs %q", *req.Fault, faults.Pause)
		}
		v = faults.Variant(*req.Strategy)
		if !slices.Contains(faults.Pause.Variants(), v) {
			return invalid("strategy %q does not run under %s: want one of %v", v, faults.Pause, faults.Pause.Variants())
		}
		if _, err := redisserver.Binary(); err != nil {
			return invalid("the %s fault needs a redis-server binary on the server's PATH", faults.Pause)
		}
		run.Kind, run.Fault, run.Strategy, run.Description = labFault, *req.Fault, string(v), faults.Pause.Describe()
		run.Runs = []labVariant{{Name: string(v), State: statePending}}
		if fix := labFix(v); fix != "" {
			run.Runs = append(run.Runs, labVariant{Name: string(fix), State: statePending})
		}
	default:
		return invalid("give recipe, or fault and strategy")
	}

	l := &s.jobs.lab
	l.mu.Lock()
	if l.running {
		l.mu.Unlock()
		return busy("lab run")
	}
	if s.jobs.ctx.Err() != nil {
		l.mu.Unlock()
		return closed()
	}
	l.running = true
	l.runs = append(l.runs, &run)
	if len(l.runs) > labKeep {
		l.runs = slices.Delete(l.runs, 0, len(l.runs)-labKeep)
	}
	s.jobs.wg.Add(1)
	answer := run
	answer.Runs = slices.Clone(run.Runs)
	l.mu.Unlock()
	go func() {
		defer s.jobs.wg.Done()
		ctx, cancel := context.WithTimeout(s.jobs.ctx, labTimeout)
		defer cancel()
		s.runLab(ctx, &run, sc, v)
	}()
	s.log.Info("lab run started", slog.String("id", run.ID), slog.String("kind", run.Kind))
	c.Response().Header().Set(echo.HeaderLocation, "/api/lab/runs/"+run.ID)
	return c.JSON(http.StatusAccepted, answer)
}

// runLab runs each variant of a lab run in turn.
func (s *Server) runLab(ctx context.Context, run *labRun, sc gallery.Scenario, v faults.Variant) {
	l := &s.jobs.lab
	start := time.Now()
	set := func(f func()) {
		l.mu.Lock()
		defer l.mu.Unlock()
		f()
		run.ElapsedMS = latency.Milliseconds(time.Since(start))
	}
	state, failure := stateDone, ""
	env, closeEnv, err := s.labEnv()
	if err != nil {
		s.log.Warn("lab run failed", slog.String("id", run.ID), slog.Any("err", err))
		set(func() { run.State, run.Error, l.running = stateFailed, err.Error(), false })
		return
	}
	defer closeEnv()
	for i := range run.Runs {
		set(func() { run.Runs[i].State = stateRunning })
		var tl timeline.Timeline
		var err error
		if run.Kind == labRecipe {
			tl, err = sc.RunOne(ctx, env, i == 1)
		} else {
			tl, _, err = faults.Trace(ctx, faults.Pause, faults.Variant(run.Runs[i].Name),
				faults.Config{LockTTL: labLockTTL, Pause: labPause})
		}
		if err != nil {
			s.log.Warn("lab run failed", slog.String("id", run.ID), slog.Any("err", err))
			set(func() { run.Runs[i].State = stateFailed })
			state, failure = stateFailed, err.Error()
			break
		}
		set(func() {
			run.Runs[i].State = stateDone
			run.Runs[i].Timeline = &tl
			run.Runs[i].Steps = labSteps(tl)
			run.Runs[i].Verdict = labVerdict(tl)
			run.Runs[i].Violations = tl.Violations
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

// getLab is GET /api/lab/runs/:id.
func (s *Server) getLab(c echo.Context) error {
	run, ok := s.jobs.lab.find(c.Param("id"))
	if !ok {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound,
			Message: fmt.Sprintf("no lab run %q (the last %d are kept)", c.Param("id"), labKeep)}
	}
	return c.JSON(http.StatusOK, run)
}
