package sched

// The explorer as package search sees it (System), and the replay of a
// schedule by its actions.

import (
	"context"
	"errors"
	"slices"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/search"
)

// SearchErr is an error of the search as the explorer says it.
func SearchErr(err error) error {
	if errors.Is(err, search.ErrRetries) {
		return ErrUnsteady
	}
	return err
}

// System is an explorer as the search sees it: a schedule is a run of the
// target's clients, a choice an enabled action, its identity the action.
type System struct{ Explorer *Explorer }

// Run runs one schedule, its choices made by choose, and tallies it if
// it completed.
func (s System) Run(ctx context.Context, choose search.Chooser[Choice]) (search.Outcome, error) {
	sc, err := s.Explorer.runOnce(ctx, choose)
	if sc == nil {
		return search.Outcome{}, err
	}
	if err == nil && sc.Complete {
		s.Explorer.act.tally(sc.world)
	}
	if !sc.Complete && len(sc.Violations) > 0 && s.Explorer.strays != nil &&
		!errors.Is(err, search.ErrRetry) {
		s.Explorer.strays.add(sc)
	}
	return search.Outcome{Complete: sc.Complete, Violations: sc.Violations, Data: sc}, err
}

// Key is a choice's identity: its action.
func (System) Key(c Choice) action.Action { return c.Action }

// Independent reports whether two choices commute (for the sleep sets).
func (System) Independent(a, b Choice) bool { return independent(a, b) }

// Fault reports whether a choice strikes a fault (Model.Faults bounds them).
func (System) Fault(c Choice) bool { return c.IsFault() }

// Owner is the thread a choice moves, for pct.
func (System) Owner(c Choice) string { return owner(c.Action) }

// owner is the thread an action moves, for pct: the clock for a tick,
// the node a node fault strikes, else the client.
func owner(a action.Action) string {
	switch {
	case a.Kind == action.Tick:
		return "clock"
	case a.Node != "" && a.IsFault():
		return a.Node
	}
	return a.Client
}

// firstCommand is the chooser of replays: the first enabled command or tick,
// never a fault.
func firstCommand(d search.Decision[Choice]) (int, bool) {
	for i, c := range d.Enabled {
		if c.Kind == action.Run || c.Kind == action.Tick {
			return i, true
		}
	}
	return 0, false
}

// replay runs one schedule: actions, then the first enabled command or
// tick at each step.
func (e *Explorer) replay(ctx context.Context, actions []action.Action) (*Schedule, error) {
	r, err := search.Replay(ctx, search.System[Choice, action.Action](System{e}), actions, firstCommand)
	if err != nil {
		return nil, SearchErr(err)
	}
	return r.Data.(*Schedule), nil
}

// Replay runs one schedule: actions, then the first enabled command or
// tick at each step until nothing is enabled. It returns the steps and
// the violations found.
func (e *Explorer) Replay(ctx context.Context, actions []action.Action) ([]action.Step, []result.Violation, error) {
	s, err := e.replay(ctx, actions)
	if err != nil {
		return nil, nil, err
	}
	return s.Steps, s.Violations, nil
}

// add keeps s's violations where they are the shortest of their property.
func (st *strays) add(s *Schedule) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, v := range s.Violations {
		n := min(v.Step+1, len(s.actions), len(s.Steps))
		if f, ok := st.found[v.Property]; ok && len(f.Actions) <= n {
			continue
		}
		st.found[v.Property] = result.Counterexample{
			Violation: v,
			Actions:   slices.Clone(s.actions[:n]),
			Steps:     slices.Clone(s.Steps[:n]),
		}
	}
}
