package explore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lockmarket/lockmarket/explore/search"
)

// ErrNotEnabled is returned by Cut and FindFrom when an action of the
// prefix is not one of those enabled at its turn.
var ErrNotEnabled = search.ErrNotEnabled

// Snapshot is a schedule cut after a prefix of actions: what a person who
// chooses each action sees before choosing the next one.
type Snapshot struct {
	// Clients names the clients, in order.
	Clients []string `json:"clients"`
	// Steps is the prefix as it ran.
	Steps []Step `json:"steps"`
	// Enabled is the actions that may come next, each as Cut takes it
	// back; empty when the schedule is complete.
	Enabled []Action `json:"enabled"`
	// ClockMS is the virtual time now.
	ClockMS int64 `json:"clock_ms"`
	// Holders is the clients that hold a lease not yet run out.
	Holders []Holder `json:"holders"`
	// Violations is what broke so far: mutual exclusion at the step that
	// broke it; the resource and liveness once the schedule is complete.
	Violations []Violation `json:"violations"`
	// Complete is set once nothing is enabled.
	Complete bool `json:"complete"`
	// Notes says each step in plain words (view.go); Views is each client
	// as it stands now; Chains is the causal chain of each violation.
	Notes  []StepNote   `json:"notes"`
	Views  []ClientView `json:"views"`
	Chains []Chain      `json:"chains"`
}

// Holder is a client holding a lease.
type Holder struct {
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
func Cut(ctx context.Context, e *Explorer, actions []Action) (*Snapshot, error) {
	var enabled []Action
	r, err := search.Replay(
		ctx,
		search.System[choice, Action](system{e}),
		actions,
		func(d search.Decision[choice]) (int, bool) {
			enabled = nil // a run again (unsteady) asks again
			for _, c := range d.Enabled {
				enabled = append(enabled, c.Action)
			}
			return 0, false
		},
	)
	if err != nil {
		return nil, searchErr(err)
	}
	s := r.Data.(*schedule)
	snap := &Snapshot{
		Clients:    s.clients,
		Steps:      s.steps,
		Enabled:    enabled,
		ClockMS:    s.end.Milliseconds(),
		Violations: s.violations,
		Complete:   s.complete,
	}
	if snap.Steps == nil {
		snap.Steps = []Step{}
	}
	if snap.Enabled == nil {
		snap.Enabled = []Action{}
	}
	if snap.Violations == nil {
		snap.Violations = []Violation{}
	}
	w := s.world
	w.mu.Lock()
	for _, c := range w.holders() {
		until := int64(-1)
		if end := c.hold.end(); end >= 0 {
			until = end.Milliseconds()
		}
		key := c.hold.key
		if key == "" && e.Target().lockKeys != nil {
			if ks := e.Target().lockKeys(e.ns); len(ks) > 0 {
				key = ks[0]
			}
		}
		snap.Holders = append(
			snap.Holders,
			Holder{Client: c.name, Key: e.Target().short(key), Write: c.hold.write, UntilMS: until},
		)
	}
	w.mu.Unlock()
	if snap.Holders == nil {
		snap.Holders = []Holder{}
	}
	n := narrate(e, s)
	snap.Notes, snap.Views, snap.Chains = n.notes, n.views(), n.chains(snap.Violations)
	return snap, nil
}

// FindFrom searches, depth first, the schedules that start with prefix for
// one that breaks a property the prefix has not broken already, and
// returns the search's result: its violations' counterexamples start with
// prefix (they are not shortened, which could drop a step of it). The
// search stops at the first violation.
func FindFrom(ctx context.Context, e *Explorer, prefix []Action, o Options) (*Result, error) {
	snap, err := Cut(ctx, e, prefix)
	if err != nil {
		return nil, err
	}
	check := o.Check
	if check == nil {
		check = e.Target().Checks
	}
	o.Check = slices.DeleteFunc(slices.Clone(check), func(p string) bool {
		return slices.ContainsFunc(
			snap.Violations,
			func(v Violation) bool { return v.Property == p },
		)
	})
	if len(o.Check) == 0 {
		return nil, fmt.Errorf("%w: every property checked is broken already", ErrNothingToFind)
	}
	o.Mode, o.NoShrink, o.StopAtFirst = Exhaustive, true, true
	o.prefix = slices.Clone(prefix)
	return e.Explore(ctx, o)
}

// ErrNothingToFind is returned by FindFrom when the prefix has broken
// every property already.
var ErrNothingToFind = errors.New("explore: nothing left to find")
