package explore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
)

// ErrNotEnabled is returned by Session.Apply for an action that is not
// among the state's enabled ones.
var ErrNotEnabled = errors.New("explore: action not enabled")

// Session steps through one schedule of a target by hand: a person (or a
// program) picks each action among the enabled ones, can take it back,
// and can ask for a continuation that breaks a property. Each state is
// obtained by replaying the actions taken so far from a clean namespace,
// so a session holds no goroutine between calls. It is not safe for
// concurrent use.
type Session struct {
	e       *Explorer
	actions []Action
	state   State
}

// State is where a session stands.
type State struct {
	// Steps is what happened so far.
	Steps []Step `json:"steps"`
	// Enabled is the actions that may be taken next; send one back as is
	// to Apply.
	Enabled []Action `json:"enabled"`
	// ClockMS is the virtual time.
	ClockMS int64 `json:"clock_ms"`
	// Holders is the clients that hold a lease that has not run out.
	Holders []string `json:"holders"`
	// Violations is what broke so far (the properties read at the end,
	// resource and liveness, once nothing is enabled).
	Violations []Violation `json:"violations"`
	// Done is true when nothing is enabled: the schedule is over.
	Done bool `json:"done"`
}

// NewSession starts a session on target t under model m, on the Redis
// base talks to (the lab gives it an embedded miniredis, so that users'
// scripts never run on a served Redis). Close it when done.
func NewSession(ctx context.Context, base *redis.Client, t *Target, m Model) (*Session, error) {
	e, err := New(ctx, base, t, m)
	if err != nil {
		return nil, err
	}
	s := &Session{e: e}
	if _, err := s.replay(ctx, nil); err != nil {
		e.Close()
		return nil, err
	}
	return s, nil
}

// Close deletes the session's keys and closes its clients.
func (s *Session) Close() error { return s.e.Close() }

// Explorer is the session's explorer (its target, model and namespace).
func (s *Session) Explorer() *Explorer { return s.e }

// State is the current state.
func (s *Session) State() State { return s.state }

// Apply takes one of the enabled actions.
func (s *Session) Apply(ctx context.Context, a Action) (State, error) {
	if !slices.ContainsFunc(s.state.Enabled, a.Same) {
		return s.state, fmt.Errorf("%w: %s", ErrNotEnabled, a)
	}
	return s.replay(ctx, append(slices.Clone(s.actions), a))
}

// Undo takes back the last action (nothing when there is none).
func (s *Session) Undo(ctx context.Context) (State, error) {
	if len(s.actions) == 0 {
		return s.state, nil
	}
	return s.replay(ctx, s.actions[:len(s.actions)-1])
}

// Find searches the schedules that continue the current one, depth first
// within the model's bounds, and returns the actions of the shortest
// continuation found that breaks one of the target's checked properties,
// with the property; nil actions when none does.
func (s *Session) Find(ctx context.Context) ([]Action, string, error) {
	res, err := s.e.Explore(ctx, Options{Mode: "exhaustive", StopAtFirst: true, NoShrink: true,
		prefix: slices.Clone(s.actions)})
	if err != nil {
		return nil, "", err
	}
	if len(res.Violations) == 0 {
		return nil, "", nil
	}
	best := res.Violations[0]
	for _, f := range res.Violations[1:] {
		if len(f.Actions) < len(best.Actions) {
			best = f
		}
	}
	if len(best.Actions) < len(s.actions) {
		return []Action{}, best.Property, nil // already broken
	}
	return slices.Clone(best.Actions[len(s.actions):]), best.Property, nil
}

// replay runs actions and stops where they end.
func (s *Session) replay(ctx context.Context, actions []Action) (State, error) {
	sch, err := s.e.run(ctx, actions, func(int, []choice) (int, bool) { return 0, false })
	if err != nil {
		return s.state, err
	}
	st := State{Steps: sch.steps, ClockMS: sch.clock.Milliseconds(), Holders: append([]string{}, sch.holders...),
		Violations: append([]Violation{}, sch.violations...), Enabled: []Action{}}
	if st.Steps == nil {
		st.Steps = []Step{}
	}
	for _, c := range sch.enabled {
		st.Enabled = append(st.Enabled, c.Action)
	}
	st.Done = sch.complete
	s.actions, s.state = slices.Clone(actions), st
	return st, nil
}
