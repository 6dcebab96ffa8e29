package step

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/search"
	"github.com/lockmarket/lockmarket/internal/explore/view"
)

// Snapshot is a schedule cut after a prefix of actions: what a person who
// chooses each action sees before choosing the next one.
type Snapshot struct {
	// Clients names the clients, in order.
	Clients []string `json:"clients"`
	// Steps is the prefix as it ran.
	Steps []action.Step `json:"steps"`
	// Enabled is the actions that may come next, each as Cut takes it
	// back; empty when the schedule is complete.
	Enabled []action.Action `json:"enabled"`
	// ClockMS is the virtual time now.
	ClockMS int64 `json:"clock_ms"`
	// Holders is the clients that hold a lease not yet run out.
	Holders []Holder `json:"holders"`
	// Violations is what broke so far: mutual exclusion at the step that
	// broke it; the resource and liveness once the schedule is complete.
	Violations []result.Violation `json:"violations"`
	// Complete is set once nothing is enabled.
	Complete bool `json:"complete"`
	// Notes says each step in plain words.
	Notes []view.StepNote `json:"notes"`
	// Views is each client as it stands now.
	Views []view.ClientView `json:"views"`
	// Chains is the causal chain of each violation.
	Chains []view.Chain `json:"chains"`
}

// Holder is a client holding a lease.
type Holder struct {
	// Client is the holder's name ("A").
	Client string `json:"client"`
	// Key is the lock key, without the explorer's namespace.
	Key string `json:"key"`
	// Write is false for a reader's share of a read-write lock.
	Write bool `json:"write"`
	// UntilMS is when the lease runs out on the virtual clock, -1 for
	// never (no expiry).
	UntilMS int64 `json:"until_ms"`
}

// Cut runs actions, each of which must be enabled at its turn, and stops
// there (or earlier, when nothing is enabled any more).
func Cut(ctx context.Context, e *sched.Explorer, actions []action.Action) (*Snapshot, error) {
	var enabled []action.Action
	r, err := search.Replay(
		ctx,
		search.System[sched.Choice, action.Action](sched.System{Explorer: e}),
		actions,
		func(d search.Decision[sched.Choice]) (int, bool) {
			enabled = nil // a run again (unsteady) asks again
			for _, c := range d.Enabled {
				enabled = append(enabled, c.Action)
			}
			return 0, false
		},
	)
	if err != nil {
		return nil, sched.SearchErr(err)
	}
	s := r.Data.(*sched.Schedule)
	snap := &Snapshot{
		Clients:    s.Clients,
		Steps:      s.Steps,
		Enabled:    enabled,
		ClockMS:    s.End.Milliseconds(),
		Violations: s.Violations,
		Complete:   s.Complete,
	}
	if snap.Steps == nil {
		snap.Steps = []action.Step{}
	}
	if snap.Enabled == nil {
		snap.Enabled = []action.Action{}
	}
	if snap.Violations == nil {
		snap.Violations = []result.Violation{}
	}
	for _, c := range s.Snapshot().Holders() {
		until := int64(-1)
		if end := c.Hold.End; end >= 0 {
			until = end.Milliseconds()
		}
		key := c.Hold.Key
		if l := e.Target().Lock; key == "" && l != nil && l.Keys != nil {
			if ks := l.Keys(e.KeyPrefix); len(ks) > 0 {
				key = ks[0]
			}
		}
		snap.Holders = append(
			snap.Holders,
			Holder{Client: c.Name, Key: e.Target().Short(key), Write: c.Hold.Write, UntilMS: until},
		)
	}
	if snap.Holders == nil {
		snap.Holders = []Holder{}
	}
	n := view.Narrate(e, s)
	snap.Notes, snap.Views, snap.Chains = n.Notes, n.Views(), n.Chains(snap.Violations)
	return snap, nil
}

// FindFrom searches, depth first, the schedules that start with prefix for
// one that breaks a property the prefix has not broken already, and
// returns the search's result: its violations' counterexamples start with
// prefix (they are not shortened, which could drop a step of it). The
// search stops at the first violation.
func FindFrom(
	ctx context.Context, e *sched.Explorer, prefix []action.Action, o sched.Options,
) (*result.Result, error) {
	snap, err := Cut(ctx, e, prefix)
	if err != nil {
		return nil, err
	}
	check := o.Check
	if check == nil {
		check = e.Target().Checks
	}
	o.Check = slices.DeleteFunc(e.Target().ExclusionNames(check), func(p string) bool {
		return slices.ContainsFunc(
			snap.Violations,
			func(v result.Violation) bool { return v.Property == p },
		)
	})
	if len(o.Check) == 0 {
		return nil, fmt.Errorf("%w: every property checked is broken already", ErrNothingToFind)
	}
	o.Mode, o.NoShrink, o.StopAtFirst = sched.Exhaustive, true, true
	o.Prefix = slices.Clone(prefix)
	return e.Explore(ctx, o)
}

// ErrNothingToFind is returned by FindFrom when the prefix has broken
// every property already.
var ErrNothingToFind = errors.New("explore: nothing left to find")
