package labsession

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/internal/jobs"
	"github.com/lockmarket/lockmarket/market"
)

// Bounds of the explorer sessions.
const (
	// MaxSessions is how many sessions a Manager keeps at once.
	MaxSessions = 4
	// IdleTimeout closes a session unused for this long.
	IdleTimeout = 10 * time.Minute
	// FindTimeout bounds one search for a counterexample.
	FindTimeout = 30 * time.Second
)

// Manager keeps the lab's explorer sessions. Each session explores one
// target (a gallery recipe, flawed or fixed) with the explorer's default
// model, on an embedded miniredis of its own: whatever it runs, Lua
// included, never reaches the served Redis, and no key of the served
// market is touched. The schedule is the session's state: every step,
// undo included, replays the chosen actions from the start. It
// implements the HTTP service's Explore interface, and is a
// prometheus.Collector (metrics.go).
type Manager struct {
	store *Store[*session]
	// search admits one search for a counterexample at a time.
	search chan struct{}
	stats  stats
}

// NewManager returns a Manager with no session.
func NewManager() *Manager {
	return &Manager{store: NewStore[*session](MaxSessions, IdleTimeout, nil), search: make(chan struct{}, 1)}
}

// session is one explorer session: its server, the explorer on it, the
// actions chosen so far and the state they lead to.
type session struct {
	mr      *miniredis.Miniredis
	rdb     *redis.Client
	e       *explore.Explorer
	actions []explore.Action
	snap    *explore.Snapshot
}

// Close ends the session and its server.
func (s *session) Close() error {
	err := s.e.Close()
	s.rdb.Close()
	s.mr.Close()
	return err
}

// State is a session's state as the HTTP service answers it.
type State struct {
	// Target and About say what is explored.
	Target string `json:"target"`
	About  string `json:"about"`
	*explore.Snapshot
	// Resource is the protected resource (the shared counter the
	// clients' critical sections increment) as it stands, "" before the
	// first write.
	Resource string `json:"resource"`
}

// Found is the answer of a search from the current state.
type Found struct {
	// Found is set when a continuation breaks a property.
	Found bool `json:"found"`
	// Property and Message say what broke.
	Property string `json:"property,omitempty"`
	Message  string `json:"message,omitempty"`
	// Actions is the continuation from the current state, to take one by
	// one; Steps is how it ran.
	Actions []explore.Action `json:"actions"`
	Steps   []explore.Step   `json:"steps"`
	// Schedules is how many complete schedules the search ran, Exhaustive
	// whether it covered every one within the model's bounds.
	Schedules  int     `json:"schedules"`
	Exhaustive bool    `json:"exhaustive"`
	ElapsedMS  float64 `json:"elapsed_ms"`
	// Model states the bounds searched, in words.
	Model string `json:"model"`
	// Note says why nothing was found when the search was cut short or
	// had nothing left to look for.
	Note string `json:"note,omitempty"`
}

// Start makes a session of req's target.
func (m *Manager) Start(ctx context.Context, req jobs.ExploreRequest) (string, any, error) {
	tg, err := target(req)
	if err != nil {
		return "", nil, err
	}
	id, s, err := m.store.Add(func() (*session, error) { return open(ctx, tg) })
	switch {
	case errors.Is(err, ErrBusy):
		return "", nil, fmt.Errorf("%w: %v", jobs.ErrBusy, err)
	case errors.Is(err, ErrClosed):
		return "", nil, jobs.ErrClosed
	case err != nil:
		return "", nil, err
	}
	m.stats.started()
	return id, s.state(), nil
}

// target is the explorer's target for req.
func target(req jobs.ExploreRequest) (*explore.Target, error) {
	switch {
	case req.Recipe != nil && req.Strategy != nil:
		return nil, invalid("give either recipe or strategy, not both")
	case req.Strategy != nil:
		if req.Fixed {
			return nil, invalid("fixed goes with recipe; a strategy takes fencing")
		}
		st, err := market.ParseStrategy(*req.Strategy)
		if err != nil {
			return nil, invalid("strategy %q: want one of watch, coarse, fine, lua", *req.Strategy)
		}
		tg, err := explore.Strategy(st, req.Fencing)
		if err != nil {
			return nil, invalid("%v", err)
		}
		return tg, nil
	case req.Recipe == nil:
		return nil, invalid("give recipe (one of %s), with fencing or fixed for its fix", strings.Join(explore.Recipes, ", "))
	}
	if !slices.Contains(explore.Recipes, *req.Recipe) {
		return nil, invalid("recipe %q: want one of %s", *req.Recipe, strings.Join(explore.Recipes, ", "))
	}
	tg, err := explore.Recipe(*req.Recipe, req.Fencing || req.Fixed)
	if err != nil {
		return nil, invalid("%v", err)
	}
	return tg, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", jobs.ErrInvalid, fmt.Sprintf(format, args...))
}

// open starts a server and an explorer of tg on it, at the start of a
// schedule.
func open(ctx context.Context, tg *explore.Target) (*session, error) {
	mr, err := miniredis.Run()
	if err != nil {
		return nil, fmt.Errorf("labsession: start an embedded server: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	model := explore.DefaultModel()
	model.Clients = tg.Clients
	e, err := explore.New(ctx, rdb, tg, model)
	if err != nil {
		rdb.Close()
		mr.Close()
		return nil, err
	}
	s := &session{mr: mr, rdb: rdb, e: e}
	if s.snap, err = e.Cut(ctx, nil); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// state is the session's state; the resource is read from its server.
func (s *session) state() State {
	st := State{Target: s.e.Target().Name, About: s.e.Target().About, Snapshot: s.snap}
	if v, err := s.mr.Get(s.e.Prefix() + "counter"); err == nil {
		st.Resource = "counter = " + v
	}
	if v, err := s.e.Resource(context.Background()); err == nil && v != "" {
		st.Resource = v
	}
	return st
}

// do runs f on session id, mapping the store's errors to the service's.
func (m *Manager) do(id string, f func(*session) error) error {
	err := m.store.Do(id, f)
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w: no explorer session %q (sessions end after %v unused)", jobs.ErrNotFound, id, IdleTimeout)
	case errors.Is(err, ErrClosed):
		return jobs.ErrClosed
	}
	return err
}

// State is session id's state.
func (m *Manager) State(_ context.Context, id string) (any, error) {
	var st State
	err := m.do(id, func(s *session) error { st = s.state(); return nil })
	return st, err
}

// Step takes action, which must be one of the state's enabled actions.
func (m *Manager) Step(ctx context.Context, id string, action json.RawMessage) (any, error) {
	var a explore.Action
	dec := json.NewDecoder(bytes.NewReader(action))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, invalid("an action is an object as the state's enabled list gives it: %v", err)
	}
	var st State
	err := m.do(id, func(s *session) error {
		if !slices.ContainsFunc(s.snap.Enabled, a.Same) {
			if len(s.snap.Enabled) == 0 {
				return invalid("%s is not enabled: the schedule is complete (undo, or start another session)", a)
			}
			return invalid("%s is not enabled now; the enabled actions are: %s", a, actionList(s.snap.Enabled))
		}
		snap, err := s.e.Cut(ctx, append(slices.Clone(s.actions), a))
		if err != nil {
			return err
		}
		s.actions, s.snap = append(s.actions, a), snap
		st = s.state()
		return nil
	})
	if err == nil {
		m.stats.stepped(a.Kind)
	}
	return st, err
}

func actionList(as []explore.Action) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.String()
	}
	return strings.Join(parts, "; ")
}

// Undo takes the last action back.
func (m *Manager) Undo(ctx context.Context, id string) (any, error) {
	var st State
	err := m.do(id, func(s *session) error {
		if len(s.actions) == 0 {
			return invalid("nothing to undo: no step taken yet")
		}
		back := s.actions[:len(s.actions)-1]
		snap, err := s.e.Cut(ctx, back)
		if err != nil {
			return err
		}
		s.actions, s.snap = slices.Clone(back), snap
		st = s.state()
		return nil
	})
	return st, err
}

// Find searches the continuations of the current state, depth first, for
// one that breaks a property, for at most FindTimeout; one search runs at
// a time in the whole Manager (jobs.ErrBusy otherwise).
func (m *Manager) Find(ctx context.Context, id string) (any, error) {
	var out Found
	err := m.do(id, func(s *session) error {
		select {
		case m.search <- struct{}{}:
			defer func() { <-m.search }()
		default:
			return fmt.Errorf("%w: a search for a counterexample is running; try again when it ends", jobs.ErrBusy)
		}
		model := s.e.Model()
		out.Model = fmt.Sprintf("%d clients, one critical section each, up to %d lock attempts, at most %d fault (%s), a %v lease",
			model.Clients, model.Attempts, model.Faults, strings.Join(model.FaultKinds, ", "), model.TTL)
		out.Actions, out.Steps = []explore.Action{}, []explore.Step{}
		sctx, cancel := context.WithTimeout(ctx, FindTimeout)
		defer cancel()
		start := time.Now()
		res, err := s.e.FindFrom(sctx, s.actions, explore.Options{})
		out.ElapsedMS = float64(time.Since(start).Microseconds()) / 1000
		switch {
		case errors.Is(err, explore.ErrNothingToFind):
			out.Note = "every property the target is checked for is broken already in these steps: undo to look for another way"
			return nil
		case err != nil && sctx.Err() != nil && ctx.Err() == nil:
			out.Note = fmt.Sprintf("no counterexample within %v of searching: not every continuation was covered", FindTimeout)
			if res != nil {
				out.Schedules = res.Schedules
			}
			return nil
		case err != nil:
			return err
		}
		out.Schedules, out.Exhaustive = res.Schedules, res.Exhaustive
		if len(res.Violations) == 0 {
			return nil
		}
		v := res.Violations[0]
		out.Found, out.Property, out.Message = true, v.Property, v.Message
		if n := len(s.actions); len(v.Actions) >= n && len(v.Steps) >= n {
			out.Actions, out.Steps = v.Actions[n:], v.Steps[n:]
		}
		return nil
	})
	if err == nil {
		m.stats.searched(out.Found)
	}
	return out, err
}

// Remove ends session id.
func (m *Manager) Remove(id string) error {
	if err := m.store.Remove(id); err != nil {
		return fmt.Errorf("%w: no explorer session %q", jobs.ErrNotFound, id)
	}
	return nil
}

// Close ends every session.
func (m *Manager) Close() { m.store.Close() }
