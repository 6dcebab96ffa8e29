package exploresession

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/step"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/explore/view"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/market"
	"github.com/redis/go-redis/v9"
)

// Defaults of a Manager's Config. A session costs about what docs/lab.md
// measures (an embedded miniredis, a handful of connections to it, and its
// history): MaxSessions of them fit in a few hundred megabytes.
const (
	// DefaultMaxSessions is how many sessions a Manager keeps at once.
	DefaultMaxSessions = 200
	// DefaultPerClient is how many of them one client (one remote
	// address) keeps: the page keeps one per tab.
	DefaultPerClient = 6
	// DefaultIdleTimeout closes a session unread for this long (the
	// Store looks every second): the page reads its session every 15 s
	// while it is open, so a session a closed or killed page left behind
	// is freed within a minute of its last read.
	DefaultIdleTimeout = 45 * time.Second
	// DefaultFindBudget bounds a search for a counterexample that one
	// address follows, counted from when it gets a CPU; each further
	// address whose sessions follow it adds as much, up to
	// DefaultMaxFindBudget (more sessions from one address add nothing).
	DefaultFindBudget = time.Minute
)

// Bounds of what a session answers. Every value that comes from a
// session's server (a reply, a key's value, an error's text) is cut to
// plumbing.MaxReplyBytes where the explorer reads it, with a "…(N bytes)"
// marker; these bound the rest.
const (
	// DefaultMaxAnswerBytes bounds a session's state as the service
	// answers it (JSON): a step whose answer would be longer ends the
	// session, with a message saying why.
	DefaultMaxAnswerBytes = 768 << 10
	// DefaultMaxHistoryBytes bounds a session's history, the states after
	// each of its steps (JSON), which the session keeps: a step that
	// would pass it ends the session too.
	DefaultMaxHistoryBytes = 512 << 10
	// MaxMessageBytes bounds the message of a refused request.
	MaxMessageBytes = 4 << 10
)

// bounded is a message cut to MaxMessageBytes.
func bounded(msg string) string { return rediscmd.Bound(msg, MaxMessageBytes) }

// Config configures a Manager; a zero field takes its default.
type Config struct {
	MaxSessions int
	PerClient   int
	IdleTimeout time.Duration
	FindBudget  time.Duration
	// MaxFindBudget bounds a search however many sessions follow it
	// (default DefaultMaxFindBudget, at least FindBudget).
	MaxFindBudget time.Duration
	// KeptSearches is how many ended searches' answers are kept for the
	// sessions that ask for them again (default DefaultKeptSearches;
	// below 0: none).
	KeptSearches int
	// Searches is how many searches run at once (default: the number of
	// CPUs); the others wait for one to end.
	Searches int
	// RedisServer is the redis-server binary that runs pasted Lua, one
	// server per session (a path, or a name looked up on PATH; empty:
	// redis-server). Without one, pasted Lua is refused.
	RedisServer string
	// StepBudget bounds a step of a session of pasted Lua (default
	// DefaultStepBudget).
	StepBudget time.Duration
	// MaxAnswerBytes and MaxHistoryBytes bound a session's answer and
	// history (defaults DefaultMaxAnswerBytes, DefaultMaxHistoryBytes).
	MaxAnswerBytes, MaxHistoryBytes int
}

// Manager keeps the lab's explorer sessions. Each session explores one
// target with the explorer's default model on a server of its own, never
// the served Redis: a gallery recipe, flawed or fixed, or a strategy of
// the market (the project's own code) on an embedded miniredis; pasted
// Lua on a sandbox, a redis-server started for the session and killed
// with it (sandbox.go), so that no pasted script runs in the service's
// process. The schedule is the session's
// state: every step replays the chosen actions from the start, and the
// state after each step is kept, so that the history can be shown and
// branched from any step. A search for a counterexample runs in the
// background as the session's find, which the state reports. It
// implements the HTTP service's Explore interface, and is a
// prometheus.Collector (metrics.go).
type Manager struct {
	cfg   Config
	store *Store[*session]
	// searches runs cfg.Searches searches at a time, shared by the
	// sessions that ask for the same one (search.go).
	searches *searches
	stats    stats
	reclaim  reclaimer
}

// NewManager returns a Manager with the default Config.
func NewManager() *Manager { return New(Config{}) }

// New returns a Manager of cfg with no session.
func New(cfg Config) *Manager {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.PerClient <= 0 {
		cfg.PerClient = DefaultPerClient
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.FindBudget <= 0 {
		cfg.FindBudget = DefaultFindBudget
	}
	if cfg.MaxFindBudget <= 0 {
		cfg.MaxFindBudget = DefaultMaxFindBudget
	}
	cfg.MaxFindBudget = max(cfg.MaxFindBudget, cfg.FindBudget)
	if cfg.KeptSearches == 0 {
		cfg.KeptSearches = DefaultKeptSearches
	}
	if cfg.Searches <= 0 {
		cfg.Searches = runtime.NumCPU()
	}
	if cfg.StepBudget <= 0 {
		cfg.StepBudget = DefaultStepBudget
	}
	if cfg.MaxAnswerBytes <= 0 {
		cfg.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if cfg.MaxHistoryBytes <= 0 {
		cfg.MaxHistoryBytes = DefaultMaxHistoryBytes
	}
	m := &Manager{cfg: cfg,
		store: NewStore[*session](Limits{Total: cfg.MaxSessions, PerClient: cfg.PerClient}, cfg.IdleTimeout, nil)}
	m.searches = newSearches(&m.cfg, &m.stats, func(ctx context.Context, req api.ExploreRequest) (*session, error) {
		tg, err := target(req)
		if err != nil {
			return nil, err
		}
		return m.open(ctx, req, tg)
	})
	return m
}

// Config is the Manager's configuration, defaults filled in.
func (m *Manager) Config() Config { return m.cfg }

// session is one explorer session: its server, the explorer on it, the
// actions chosen so far and the state after each.
type session struct {
	// mr is the embedded server of a recipe or a strategy, sb the
	// sandbox of pasted Lua: one of them is set.
	mr     *miniredis.Miniredis
	sb     *sandbox
	budget time.Duration
	// client is the address of the session's owner (a search's own
	// session has none).
	client string
	req    api.ExploreRequest
	tg     *sched.Target
	rdb    *redis.Client
	// reclaim, for a sandbox's session, gives back the memory once it
	// has ended.
	reclaim *reclaimer
	model   string
	// size and faults are a pasted lock's clients and faults
	// (luaBounds; 0 and nil: the target's); judged is how each property
	// is judged.
	size   int
	faults []action.Fault
	judged []api.Judged

	// mu guards e (a sandbox's explorer is made again when its server
	// is) and what follows: State reads it while a search runs.
	mu      sync.Mutex
	e       *sched.Explorer
	actions []action.Action
	steps   []action.Step
	notes   []view.StepNote
	clients []string
	// frames[k] is the state after k actions.
	frames []api.ExploreFrame
	find   *finder
}

// finder is the session's search for a counterexample: the shared
// search it follows, until the session lets go of it.
type finder struct {
	q  *searches
	sr *search
	// kept says sr had ended when the session asked.
	kept bool
	// left says the session let go of sr; own is then what it shows if
	// it let go of a search still running (cancelled). Both are guarded
	// by session.mu.
	left bool
	own  *api.FindStatus
}

// letGo marks f as let go of, and reports whether the caller is the one
// to leave the search. s.mu is held.
func (f *finder) letGo() bool {
	if f == nil || f.left {
		return false
	}
	f.left = true
	return true
}

// status is the search as the session shows it.
func (f *finder) status() api.FindStatus {
	if f.own != nil {
		return *f.own
	}
	return f.q.statusFor(f.sr, f.kept)
}

// Start makes a session of req's target for client (the remote address
// the request came from).
func (m *Manager) Start(ctx context.Context, client string, req api.ExploreRequest) (string, api.ExploreState, error) {
	tg, err := target(req)
	if err != nil {
		return "", api.ExploreState{}, err
	}
	if _, _, err := luaBounds(req); err != nil {
		return "", api.ExploreState{}, err
	}
	id, s, err := m.store.Add(client, func() (*session, error) {
		s, err := m.open(ctx, req, tg)
		if s != nil {
			s.client = client
		}
		return s, err
	})
	switch {
	case errors.Is(err, ErrBusy):
		return "", api.ExploreState{}, fmt.Errorf("%w: the explorer holds %d sessions, as many as it may; try again when one ends "+
			"(an unused one, a closed tab's among them, ends after %v)", api.ErrBusy, m.cfg.MaxSessions, m.cfg.IdleTimeout)
	case errors.Is(err, ErrClientBusy):
		return "", api.ExploreState{}, fmt.Errorf("%w: your address holds %d sessions, as many as one may; close another tab's session, "+
			"or wait %v for an unused one to end (a room that reaches the service through one address needs it "+
			"started with -sessions-per-address)", api.ErrBusy, m.cfg.PerClient, m.cfg.IdleTimeout)
	case errors.Is(err, ErrClosed):
		return "", api.ExploreState{}, api.ErrClosed
	case err != nil:
		return "", api.ExploreState{}, err
	}
	m.stats.started()
	return id, s.state(), nil
}

// open makes a session of req's target tg, on a server of its own.
func (m *Manager) open(ctx context.Context, req api.ExploreRequest, tg *sched.Target) (*session, error) {
	clients, faults, err := luaBounds(req)
	if err != nil {
		return nil, err
	}
	unfenced := req.Lua != nil || req.Recipe != nil && !req.Fixed && !req.Fencing && slices.Contains(tg.Checks, result.Resource)
	judged := judging(tg, req.Lua != nil, unfenced)
	if req.Lua == nil {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, fmt.Errorf("exploresession: start an embedded server: %w", err)
		}
		s, err := open(ctx, &session{mr: mr, rdb: redis.NewClient(&redis.Options{Addr: mr.Addr(), PoolSize: 2}), tg: tg, req: req,
			judged: judged})
		return s, scriptStopped(err)
	}
	sb, err := startSandbox(ctx, m.cfg.RedisServer)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, &session{sb: sb, rdb: sb.client(), tg: tg, req: req, budget: m.cfg.StepBudget, size: clients,
		faults: faults, judged: judged, reclaim: &m.reclaim})
	return s, scriptStopped(err)
}

// target is the explorer's target for req.
func target(req api.ExploreRequest) (*sched.Target, error) {
	switch {
	case req.Lua != nil && (req.Recipe != nil || req.Strategy != nil || req.Fixed || req.Fencing):
		return nil, api.Invalidf("lua goes alone: give a recipe, a strategy or lua")
	case req.Lua != nil:
		return luaTarget(req.Lua)
	case req.Recipe != nil && req.Strategy != nil:
		return nil, api.Invalidf("give either recipe or strategy, not both")
	case req.Strategy != nil:
		if req.Fixed {
			return nil, api.Invalidf("fixed goes with recipe; a strategy takes fencing")
		}
		st, err := market.ParseStrategy(*req.Strategy)
		if err != nil {
			return nil, api.Invalidf("strategy %q: want one of watch, coarse, fine, lua", *req.Strategy)
		}
		tg, err := targets.Strategy(st, req.Fencing)
		if err != nil {
			return nil, api.Invalidf("%v", err)
		}
		return tg, nil
	case req.Recipe == nil:
		return nil, api.Invalidf("give recipe (one of %s), with fencing or fixed for its fix", strings.Join(targets.Recipes(), ", "))
	}
	if !slices.Contains(targets.Recipes(), *req.Recipe) {
		return nil, api.Invalidf("recipe %q: want one of %s", *req.Recipe, strings.Join(targets.Recipes(), ", "))
	}
	tg, err := targets.Recipe(*req.Recipe, req.Fencing || req.Fixed)
	if err != nil {
		return nil, api.Invalidf("%v", err)
	}
	return tg, nil
}

// open starts an explorer of s.tg on s's server, at the start of a
// schedule; it closes s when it fails.
func open(ctx context.Context, s *session) (*session, error) {
	// No script of the target runs before the first step: the start is
	// bounded as a server's start is.
	lim := limits{wall: startBudget, script: s.budget}
	err := s.guardWithin(ctx, lim, "the start", func(ctx context.Context) error {
		if err := s.newExplorer(ctx); err != nil {
			return err
		}
		snap, f, err := s.cut(ctx, nil)
		if err != nil {
			return err
		}
		s.clients, s.steps, s.notes, s.frames = snap.Clients, snap.Steps, snap.Notes, []api.ExploreFrame{f}
		return nil
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	mo := s.e.Model()
	faults := fmt.Sprintf(
		"at most %d fault (%s)", mo.Faults, action.JoinFaults(mo.FaultKinds, ", "),
	)
	if mo.Faults == 0 {
		faults = "no fault"
	}
	s.model = fmt.Sprintf("%d clients, one critical section each, up to %d lock attempts, %s, a %v lease",
		mo.Clients, mo.Attempts, faults, mo.TTL)
	return s, nil
}

// newExplorer makes the session's explorer, on a server that has none
// (started, or started again).
func (s *session) newExplorer(ctx context.Context) error {
	model := action.DefaultModel()
	if s.size > 0 {
		model.Clients = s.size
	}
	if s.faults != nil {
		model.FaultKinds = s.faults
		if len(s.faults) == 0 {
			model.Faults = 0
		}
	}
	control := s.rdb.Options()
	if s.sb != nil {
		control = s.sb.controlOptions()
	}
	e, err := sched.NewControlled(ctx, s.rdb, control, s.tg, model)
	if err != nil {
		return err
	}
	if s.sb != nil {
		// A step on a sandbox is bounded by processor time and by a
		// wall-clock backstop (stepLimits), which decide: a sandbox at
		// nice 19 on a busy machine may answer after the explorer's own
		// 10 s without a client moving, and is not stuck for that.
		e.SetStuckAfter(2 * stepLimits(s.budget).wall)
	}
	s.mu.Lock()
	s.e = e
	s.mu.Unlock()
	return nil
}

// explorer is the session's explorer.
func (s *session) explorer() *sched.Explorer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e
}

// restart starts the session's sandbox again, and an explorer on it.
func (s *session) restart() error {
	if err := s.sb.restart(); err != nil {
		return err
	}
	if e := s.explorer(); e != nil {
		e.Close()
	}
	s.rdb.Close()
	s.rdb = s.sb.client()
	ctx, cancel := context.WithTimeout(context.Background(), startBudget)
	defer cancel()
	return s.newExplorer(ctx)
}

// startBudget bounds the start of a session on a sandbox, on the wall:
// the start runs none of the target's scripts, only the explorer's own;
// a machine too busy to start a session within it gets a refusal (under
// the HTTP server's write timeout, as a step's bound is).
const startBudget = 15 * time.Second

// guard runs f, an operation of the explorer that what names, on the
// session's server. On a sandbox it is bounded by the session's budget of
// CPU time (stepLimits) and a script it cuts short is refused with a
// message naming the bound; a sandbox started again gets a new explorer.
// On the embedded server, which runs only the project's code, f just
// runs.
func (s *session) guard(ctx context.Context, what string, f func(context.Context) error) error {
	return s.guardWithin(ctx, stepLimits(s.budget), what, f)
}

// guardWithin is guard within lim.
func (s *session) guardWithin(ctx context.Context, lim limits, what string, f func(context.Context) error) error {
	if s.sb == nil {
		return f(ctx)
	}
	// A server killed by the last operation is started again first, out
	// of this one's budget.
	if s.explorer() != nil && s.sb.lost() {
		if err := s.restart(); err != nil {
			return err
		}
	}
	err := s.sb.run(ctx, lim, f)
	var rerr redis.Error
	switch {
	case errors.Is(err, errAborted):
		return api.ErrClosed
	case errors.Is(err, errOverWall) && lim.cpu == 0:
		return api.Invalidf("%s did not end within %v (%s): a busy machine? try again", what, lim.wall, spent(err))
	case errors.Is(err, errOverBudget), errors.Is(err, errOverWall),
		errors.Is(err, errScriptOver) && lim.cpu > 0:
		// one message for both: which bound ran out first depends on
		// the machine's load, and the message says which
		return api.Invalidf("%s ran past its budget of %v of the sandbox's CPU time (or, on a busy machine, %v "+
			"of one script on the wall, %v of the step: %s) and was stopped (SCRIPT KILL, or the sandbox's "+
			"redis-server killed and started again): a loop that never ends?", what, lim.cpu,
			scriptWallFactor*lim.script, lim.wall, spent(err))
	case errors.Is(err, errScriptOver):
		return api.Invalidf("a script in %s ran past the budget of a step, %v of the sandbox's CPU time (or %v on "+
			"a busy machine), and was stopped (SCRIPT KILL, or the sandbox's redis-server killed): a loop that "+
			"never ends?", what, lim.script, scriptWallFactor*lim.script)
	case errors.Is(err, errServerLost):
		return api.Invalidf("the sandbox's redis-server stopped during %s and was started again: "+
			"a script past the sandbox's bounds (%d MiB of Lua heap, maxmemory %d MiB)?", what,
			SandboxHeap>>20, SandboxMaxMemory>>20)
	case errors.Is(err, sched.ErrUnreadable), errors.Is(err, sched.ErrStuck):
		// a key a script wrote, or a script that kept a client waiting:
		// that script may still run, and the server goes with it (the
		// next step starts it again)
		if errors.Is(err, sched.ErrStuck) {
			s.sb.kill()
		}
		return api.Invalidf("%s: %s", what, bounded(strings.TrimPrefix(err.Error(), "explore: ")))
	case errors.As(err, &rerr):
		// the sandbox refused one of the explorer's own commands: a
		// script left it so (a key of another type, a full memory)
		return api.Invalidf("%s: the sandbox answered the explorer's own command with an error (a script "+
			"left its keys so?): %s", what, bounded(rerr.Error()))
	}
	return err
}

// cut runs actions on the session's explorer and reads the frame they
// lead to. No search may be running.
func (s *session) cut(ctx context.Context, actions []action.Action) (*step.Snapshot, api.ExploreFrame, error) {
	e := s.explorer()
	snap, err := step.Cut(ctx, e, actions)
	if err != nil {
		return nil, api.ExploreFrame{}, err
	}
	f := api.ExploreFrame{ClockMS: snap.ClockMS, Holders: snap.Holders, Enabled: snap.Enabled, Violations: snap.Violations,
		Complete: snap.Complete, Views: snap.Views, Chains: snap.Chains}
	if v, err := s.rdb.Get(ctx, e.Prefix()+sched.CounterKey).Result(); err == nil {
		f.Resource = "counter = " + rediscmd.Bound(v, plumbing.MaxReplyBytes)
	}
	if v, err := e.Resource(ctx); err == nil && v != "" {
		f.Resource = rediscmd.Bound(v, plumbing.MaxReplyBytes)
	}
	return snap, f, nil
}

// Abort stops at once what runs on a sandbox, if the session has one,
// and kills its server: the Store calls it before Close, which would wait
// for the operation in progress.
func (s *session) Abort() {
	if s.sb != nil {
		s.sb.abort()
	}
}

// Close lets go of the session's search, if one runs (which ends it if
// no other session follows it), then ends the session and its server.
func (s *session) Close() error {
	s.mu.Lock()
	f := s.find
	e := s.e
	leave := f.letGo()
	s.mu.Unlock()
	if leave {
		f.q.leave(f.sr)
	}
	var err error
	if s.sb != nil {
		// the server first, and what ran on it: the sandbox goes with
		// its keys, no need to delete them
		s.sb.Close()
		if e != nil {
			e.Close()
		}
	} else if e != nil {
		err = e.Close()
	}
	s.rdb.Close()
	if s.mr != nil {
		s.mr.Close()
	}
	if s.reclaim != nil {
		s.reclaim.free()
	}
	return err
}

// state is the session's state. s.mu is not held.
func (s *session) state() api.ExploreState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateLocked()
}

func (s *session) stateLocked() api.ExploreState {
	cur := s.frames[len(s.frames)-1]
	st := api.ExploreState{Target: s.e.Target().Name, About: s.e.Target().About, Model: s.model,
		Snapshot: &step.Snapshot{Clients: s.clients, Steps: s.steps, Enabled: cur.Enabled, ClockMS: cur.ClockMS,
			Holders: cur.Holders, Violations: cur.Violations, Complete: cur.Complete, Notes: s.notes, Views: cur.Views,
			Chains: cur.Chains},
		Resource: cur.Resource, Frames: slices.Clone(s.frames), Judged: s.judged}
	if f := s.find; f != nil {
		fs := f.status()
		st.Find = &fs
	}
	return st
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// searching reports whether a search runs on the session. s.mu is held.
func (s *session) searching() bool { return s.find != nil && s.find.status().State == api.StateRunning }

var errSearching = fmt.Errorf("%w: a search for a counterexample is running on this session: cancel it "+
	"(DELETE .../find) or wait for it to end", api.ErrBusy)

// do runs f on session id, mapping the store's errors to the service's.
func (m *Manager) do(id string, f func(*session) error) error {
	return m.storeErr(id, m.store.Do(id, f))
}

func (m *Manager) storeErr(id string, err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w: no explorer session %q (sessions end after %v unused)", api.ErrNotFound, id, m.cfg.IdleTimeout)
	case errors.Is(err, ErrClosed):
		return api.ErrClosed
	}
	return err
}

// State is session id's state. It does not wait for a step or a search
// in progress.
func (m *Manager) State(_ context.Context, id string) (api.ExploreState, error) {
	s, err := m.store.Get(id)
	if err != nil {
		return api.ExploreState{}, m.storeErr(id, err)
	}
	return s.state(), nil
}

// stepRequest is the body of a step: one of the enabled actions of the
// frame after FromStep steps (default: the last), which discards the steps
// after it.
type stepRequest struct {
	Action   action.Action
	FromStep *int
}

// parseStep reads a step's body: an action as the enabled lists give it,
// and from_step beside its fields.
func parseStep(body []byte) (stepRequest, error) {
	var req stepRequest
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return req, err
	}
	if raw, ok := fields["from_step"]; ok {
		if err := json.Unmarshal(raw, &req.FromStep); err != nil {
			return req, fmt.Errorf("from_step: %w", err)
		}
		delete(fields, "from_step")
	}
	for name := range fields {
		if !actionFields[name] {
			return req, fmt.Errorf("unknown field %q", name)
		}
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return req, err
	}
	return req, json.Unmarshal(rest, &req.Action)
}

// actionFields are the names of an action's fields in JSON (its
// UnmarshalJSON takes any others silently): those of an action with
// every field set.
var actionFields = func() map[string]bool {
	b, err := json.Marshal(action.Action{Kind: "k", Client: "c", Index: 1, Command: "c", Length: "l", At: 1, Node: "n"})
	if err != nil {
		panic(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	names := map[string]bool{}
	for name := range m {
		names[name] = true
	}
	return names
}()

// Step takes an action, which must be one of the enabled actions of the
// step it branches from (the last one, or from_step).
func (m *Manager) Step(ctx context.Context, id string, body json.RawMessage) (api.ExploreState, error) {
	req, err := parseStep(body)
	if err != nil {
		return api.ExploreState{}, api.Invalidf("an action is an object as the state's enabled list gives it, with from_step to branch "+
			"from an earlier step: %v", err)
	}
	a := req.Action
	var st api.ExploreState
	err = m.do(id, func(s *session) error {
		s.mu.Lock()
		from, err := s.fromLocked(req.FromStep)
		busy := s.searching()
		var en []action.Action
		if err == nil {
			en = s.frames[from].Enabled
		}
		base := slices.Clone(s.actions[:from])
		s.mu.Unlock()
		switch {
		case err != nil:
			return err
		case busy:
			return errSearching
		case !slices.ContainsFunc(en, a.Same):
			if len(en) == 0 {
				return api.Invalidf("%s is not enabled: the schedule is complete at step %d (undo, or start another session)", a, from)
			}
			return api.Invalidf("%s is not enabled at step %d; the enabled actions are: %s", a, from, actionList(en))
		}
		var snap *step.Snapshot
		var f api.ExploreFrame
		err = s.guard(ctx, "the step", func(ctx context.Context) error {
			var err error
			snap, f, err = s.cut(ctx, append(base, a))
			return err
		})
		if err != nil {
			return scriptStopped(err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		frames := append(s.frames[:from+1:from+1], f)
		if err := m.tooLarge(s.stateLocked(), frames, snap); err != nil {
			return err
		}
		s.actions, s.steps, s.notes = append(base, a), snap.Steps, snap.Notes
		s.frames = frames
		s.find = nil
		st = s.stateLocked()
		return nil
	})
	if errors.Is(err, errTooLarge) {
		// the session's values are dropped with it
		m.store.Remove(id)
		return api.ExploreState{}, api.Invalidf("%s", strings.TrimPrefix(err.Error(), errTooLarge.Error()+": "))
	}
	if err == nil {
		m.stats.stepped(a.Kind)
	}
	return st, err
}

// errTooLarge ends a session whose step would pass a bound of its size.
var errTooLarge = errors.New("exploresession: a session past its size")

// tooLarge checks the state a step leads to, st as it is now with frames
// and snap after the step, against the bounds of an answer and a history.
func (m *Manager) tooLarge(st api.ExploreState, frames []api.ExploreFrame, snap *step.Snapshot) error {
	st.Frames = frames
	cur := frames[len(frames)-1]
	st.Snapshot = &step.Snapshot{Clients: snap.Clients, Steps: snap.Steps, Enabled: cur.Enabled,
		ClockMS: cur.ClockMS, Holders: cur.Holders, Violations: cur.Violations, Complete: cur.Complete,
		Notes: snap.Notes, Views: cur.Views, Chains: cur.Chains}
	st.Resource = cur.Resource
	hist, err := json.Marshal(frames)
	if err != nil {
		return err
	}
	ans, err := json.Marshal(st)
	if err != nil {
		return err
	}
	switch {
	case len(hist) > m.cfg.MaxHistoryBytes:
		return fmt.Errorf("%w: this session has ended: after this step its history would hold %d bytes, "+
			"more than the %d a session may keep (its server's values are shown cut, but many steps of "+
			"them add up); start another session", errTooLarge, len(hist), m.cfg.MaxHistoryBytes)
	case len(ans) > m.cfg.MaxAnswerBytes:
		return fmt.Errorf("%w: this session has ended: this step's answer would be %d bytes, more than "+
			"the %d an answer may be; start another session", errTooLarge, len(ans), m.cfg.MaxAnswerBytes)
	}
	return nil
}

// fromLocked checks a from_step against the history. s.mu is held.
func (s *session) fromLocked(from *int) (int, error) {
	if from == nil {
		return len(s.actions), nil
	}
	if *from < 0 || *from > len(s.actions) {
		return 0, api.Invalidf("from_step %d: the history has steps 0 to %d", *from, len(s.actions))
	}
	return *from, nil
}

func actionList(as []action.Action) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = a.String()
	}
	return strings.Join(parts, "; ")
}

// Undo takes the last action back.
func (m *Manager) Undo(_ context.Context, id string) (api.ExploreState, error) {
	var st api.ExploreState
	err := m.do(id, func(s *session) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case s.searching():
			return errSearching
		case len(s.actions) == 0:
			return api.Invalidf("nothing to undo: no step taken yet")
		}
		n := len(s.actions) - 1
		// A replay of a prefix takes the same steps as the longer
		// schedule did: the state after each was kept.
		s.actions, s.steps, s.notes, s.frames = s.actions[:n:n], s.steps[:n:n], s.notes[:n:n], s.frames[:n+1:n+1]
		s.find = nil
		st = s.stateLocked()
		return nil
	})
	return st, err
}

// findRequest is the body of a find: the step to search from (default:
// the last).
type findRequest struct {
	FromStep *int `json:"from_step"`
}

// Find starts a search, depth first, of the continuations of a step of
// the history (the last one, or from_step) for one that breaks a
// property, in the background; the session's state reports it. A
// session follows one search at a time. The sessions that ask for the
// same search (the same target and model, the same steps) share it, or
// its kept answer; Config.Searches run at once in all, the others wait in
// a queue (search.go).
func (m *Manager) Find(_ context.Context, id string, body json.RawMessage) (api.ExploreState, error) {
	var req findRequest
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return api.ExploreState{}, api.Invalidf("a find takes {} or {\"from_step\": N}: %v", err)
		}
	}
	var st api.ExploreState
	err := m.do(id, func(s *session) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		from, err := s.fromLocked(req.FromStep)
		switch {
		case err != nil:
			return err
		case s.searching():
			return fmt.Errorf("%w: a search is running on this session already", api.ErrBusy)
		}
		prefix := slices.Clone(s.actions[:from])
		sr, kept, err := m.searches.join(searchKey(s.req, s.model, prefix), s.client, s.req, prefix,
			s.frames[from].Violations)
		if err != nil {
			return err
		}
		s.find = &finder{q: m.searches, sr: sr, kept: kept}
		st = s.stateLocked()
		return nil
	})
	return st, err
}

// CancelFind lets go of session id's search, which ends if no other
// session follows it (it waits for that), and returns the state, whose
// search says it was cancelled; a search that has ended already is left
// as it is.
func (m *Manager) CancelFind(_ context.Context, id string) (api.ExploreState, error) {
	s, err := m.store.Get(id)
	if err != nil {
		return api.ExploreState{}, m.storeErr(id, err)
	}
	s.mu.Lock()
	f := s.find
	s.mu.Unlock()
	if f == nil {
		return api.ExploreState{}, fmt.Errorf("%w: no search on session %q since its last step", api.ErrNotFound, id)
	}
	s.mu.Lock()
	leave := f.letGo()
	s.mu.Unlock()
	if leave {
		m.searches.leave(f.sr)
		s.mu.Lock()
		if fs := f.status(); fs.State == api.StateRunning || fs.State == api.StateCancelled {
			// still running for others, or ended by this session's
			// going: cancelled, for this session
			fs.State, fs.Waiting, fs.QueuePosition, fs.WaitEstimateMS = api.StateCancelled, false, 0, 0
			f.own = &fs
		}
		s.mu.Unlock()
	}
	return s.state(), nil
}

// Remove ends session id, and its search if one runs.
func (m *Manager) Remove(id string) error {
	if err := m.store.Remove(id); err != nil {
		return fmt.Errorf("%w: no explorer session %q", api.ErrNotFound, id)
	}
	return nil
}

// Close ends every session and every search.
func (m *Manager) Close() {
	m.store.Close()
	m.searches.close()
}
