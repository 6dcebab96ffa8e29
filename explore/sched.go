package explore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/explore/search"
	"github.com/lockmarket/lockmarket/locking"
)

// The kinds of Action.
const (
	// Run releases one pending command (or pipeline) of a client: Redis
	// runs it now.
	Run = "run"
	// Tick advances the virtual clock to a deadline: a client's sleep, or
	// the end of a pause. Every sleep due by then ends, every pause ends,
	// and every lease in the namespace shortens by the time that passed.
	Tick = "tick"
	// Pause freezes a client (all its goroutines) for a length: short
	// (half the lease), long (one and a half leases) or forever (it never
	// runs again, but it is not dead: what it holds, it still holds).
	Pause = "pause"
	// Crash stops a client for good: its pending command is never sent,
	// and it counts as dead for liveness.
	Crash = "crash"
	// Start lets a client begin a critical section (take the lock): at
	// the start of the schedule, or after time has passed.
	Start = "start"
)

// The pause lengths.
const (
	Short   = "short"
	Long    = "long"
	Forever = "forever"
)

// Action is one choice of the scheduler. It is JSON-serialisable; an
// action read back from JSON identifies the same choice (Same).
type Action struct {
	Kind   string `json:"kind"`
	Client string `json:"client,omitempty"`
	// Index is, for Run, which of the client's pending commands (they are
	// ordered by command and key); almost always 0.
	Index int `json:"index,omitempty"`
	// Command is, for Run, the command's name and keys (for reading, and
	// to tell commands apart).
	Command string `json:"command,omitempty"`
	// Length is a Pause's length: short, long or forever.
	Length string `json:"length,omitempty"`
	// At is, for Tick, the virtual time it advances to, to the
	// nanosecond: a sleep of the code under test can end between two
	// milliseconds (Dilation). In JSON it is at_ms, in milliseconds with
	// the decimals it needs to be exact.
	At time.Duration `json:"-"`
	// Node is, for Restart and Jump, the node that fails.
	Node string `json:"node,omitempty"`
}

// Same reports whether a and b are the same choice.
func (a Action) Same(b Action) bool {
	return a.Kind == b.Kind && a.Client == b.Client && a.Index == b.Index &&
		a.Command == b.Command &&
		a.Length == b.Length && a.At == b.At &&
		a.Node == b.Node
}

// String says what the action does.
func (a Action) String() string {
	if f := faultOf(a); f != nil {
		return f.describe(a)
	}
	switch a.Kind {
	case Run:
		return a.Client + ": " + a.Command
	case Tick:
		return fmt.Sprintf("clock → %s", fmtAt(a.At))
	case Start:
		return a.Client + " starts"
	}
	return a.Kind
}

// choice is an enabled action with what it touches, for the reduction.
type choice struct {
	Action
	keys  []string
	write bool
	p     *parked
}

// independent reports whether two enabled actions commute: actions of
// different clients that touch different keys, or only read the same
// ones. A tick depends on everything; a fault commutes as its entry in
// faults says.
func independent(a, b choice) bool {
	if f := faultOf(a.Action); f != nil {
		return f.commutes(a, b)
	}
	if f := faultOf(b.Action); f != nil {
		return f.commutes(b, a)
	}
	if a.Client == b.Client && !onOtherNodes(a, b) || a.Kind == Tick || b.Kind == Tick {
		return false
	}
	if a.Kind != Run || b.Kind != Run {
		return true
	}
	if !a.write && !b.write {
		return true
	}
	for _, k := range a.keys {
		for _, l := range b.keys {
			if k == l || k == "*" || l == "*" {
				return false
			}
		}
	}
	return true
}

// Step is one action of a schedule as it ran.
type Step struct {
	Action Action `json:"action"`
	// ClockMS is the virtual time when it ran.
	ClockMS int64 `json:"clock_ms"`
	// Text says what happened: the command and its reply, the fault.
	Text string `json:"text"`
	// HeldMS is, for a command, how long it was held in flight: it was
	// sent HeldMS before ClockMS, when it landed (0: it landed as it was
	// sent).
	HeldMS int64 `json:"held_ms,omitempty"`
	// Violation names the property that broke at this step, if any.
	Violation string `json:"violation,omitempty"`
}

// Violation is a property found broken: Property is mutual_exclusion,
// resource or liveness; Message says how; Step is the index in the
// schedule's steps where it broke (the last step for the properties
// checked at the end).
type Violation = search.Violation

// The properties.
const (
	MutualExclusion = "mutual_exclusion"
	Resource        = "resource"
	Liveness        = "liveness"
)

// properties lists the properties in the order they are reported
// (Ownership is in manifest_run.go, Lease in lease.go).
var properties = []string{MutualExclusion, Resource, Liveness, Ownership, Lease}

// Properties lists the properties in the order they are reported; the
// slice is the caller's.
func Properties() []string { return slices.Clone(properties) }

// schedule is one run of the target's clients under the scheduler.
type schedule struct {
	steps      []Step
	actions    []Action
	violations []Violation
	faults     int
	ticks      int
	complete   bool // ran until nothing was enabled (not cut by the chooser)
	cmdLog     []cmdRecord
	expired    []expiry
	lost       map[int][]string // keys a node fault lost, by step
	clients    []string
	end        time.Duration
	// world is the schedule's world, kept to read where it stopped (Cut).
	world *world
}

type expiry struct {
	at   time.Duration
	keys []string
}

// errUnsteady is returned by runOnce when the real time the schedule
// took may have changed its outcome: a stall of this process or of the
// server longer than the margin of a lease on the server (which runs down
// in real time between two advances of the clock; dilated, the margin is
// the virtual time left times Dilation), or a command whose reply came
// back so late that whether a lease outlived an advance of the clock is
// not known. The schedule is run again.
var errUnsteady = fmt.Errorf(
	"explore: the schedule's real timing was unsteady: %w",
	search.ErrRetry,
)

// errScriptMissed is returned by runOnce for a run in which an EVALSHA
// met NOSCRIPT: the server's script cache, which no reset of the
// namespace clears, made that run differ from the same schedule run
// later. The run is void and run again, with the script cached (the
// EVAL after the NOSCRIPT cached it), so that the search does not depend
// on what earlier runs or searches left on the server.
var errScriptMissed = fmt.Errorf(
	"explore: a script was not yet cached on the server: %w",
	search.ErrRetry,
)

// ErrUnsteady is returned when a schedule was unsteady (a stall longer
// than a lease's margin) in every one of maxUnsteady runs: the machine
// is too busy for the model's leases.
var ErrUnsteady = errors.New(
	"explore: the machine stalled longer than a lease's margin, run after run",
)

// runOnce runs one schedule: the actions choose picks.
func (e *Explorer) runOnce(ctx context.Context, choose search.Chooser[choice]) (*schedule, error) {
	if err := e.reset(ctx); err != nil {
		return nil, err
	}
	w := &world{
		t:              e.target,
		epoch:          e.epoch,
		factor:         e.factor,
		stuckAfter:     e.stuckAfter,
		signal:         make(chan struct{}, 1),
		lastTickServer: e.resetAt,
		tickSent:       time.Now(),
		written:        map[string]window{},
		keyLog:         map[string][]string{},
		tokens:         map[string]string{},
		maxDelay:       e.model.MaxDelay,
		goroutines:     map[uint64]gref{},
		ids:            map[string]int{},
	}
	if e.target.steadySleeps {
		w.sleepAs = e.model.Retry
	}
	for i := range e.model.Clients {
		c := &client{
			w:       w,
			name:    clientName(i),
			idx:     i,
			rdb:     e.clients[i],
			spawned: 1,
			wall:    e.wall[i],
		}
		w.clients = append(w.clients, c)
		e.slots[i].set(c)
	}
	s := &schedule{world: w}
	for _, c := range w.clients {
		s.clients = append(s.clients, c.name)
	}
	w.running, w.live = len(w.clients), len(w.clients)
	for _, c := range w.clients {
		cctx := locking.WithClock(ctx, clock{c})
		go func() {
			defer w.exit()
			w.track(c, 0)
			err := e.target.work(cctx, c, e.model)
			// Every error counts, whatever its kind, unless the client
			// was stopped (a crash, the end of the schedule) or the
			// search was: then its command or sleep failed on purpose.
			w.mu.Lock()
			if err != nil && !w.stopping && !c.crashed && ctx.Err() == nil {
				c.failure = err
			}
			w.mu.Unlock()
		}()
	}
	err := e.drive(ctx, w, s, choose)
	w.mu.Lock()
	if err == nil && w.missedScript {
		err = errScriptMissed
	}
	w.mu.Unlock()
	if errors.Is(err, errUnsteady) {
		e.reruns.Add(1)
	}
	if ferr := e.finish(ctx, w, s, err == nil); err == nil {
		err = ferr
	}
	if err == nil {
		for _, c := range w.clients {
			if c.failure != nil {
				return s, fmt.Errorf("%w: client %s: %w", ErrTarget, c.name, c.failure)
			}
		}
	}
	return s, err
}

// ErrTarget wraps an error of the code under test that is not a
// property violation: a Lua script that failed or answered outside the
// convention, say.
var ErrTarget = errors.New("explore: the target failed")

func clientName(i int) string { return string(rune('A' + i)) }

// drive makes the schedule's choices until nothing is enabled.
func (e *Explorer) drive(
	ctx context.Context, w *world, s *schedule, choose search.Chooser[choice],
) error {
	for depth := 0; ; depth++ {
		if err := w.settle(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if w.unsteadyNow() {
			return errUnsteady
		}
		if depth > 0 {
			w.checkHolders(s)
			w.checkOwnership(s)
			if err := e.checkLease(ctx, w, s); err != nil {
				return err
			}
		}
		if w.failed() {
			s.complete = true
			return nil
		}
		en := w.enabled(e.model, s.faults, s.ticks)
		if len(en) == 0 || depth >= e.model.MaxSteps {
			s.complete = true
			return nil
		}
		i, ok := choose(e.decision(w, s, depth, en))
		if !ok {
			return nil
		}
		if err := e.apply(ctx, w, s, en[i]); err != nil {
			return err
		}
	}
}

func (w *world) failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.clients {
		if c.failure != nil {
			return true
		}
	}
	return false
}

// settle waits until every goroutine of every client is parked at a
// command, asleep on its clock, or finished. A sleeper whose context has
// ended is woken first.
func (w *world) settle() error {
	return w.await(func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, s := range slices.Clone(w.sleepers) {
			if err := s.ctx.Err(); err != nil {
				w.wake(s, err)
			}
		}
		return w.running == 0
	})
}

// enabled lists the actions the scheduler may take now, in a fixed order:
// commands by client, ticks by time, then faults.
func (w *world) enabled(m Model, faults, ticks int) []choice {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []choice
	byClient := map[*client][]*parked{}
	for _, p := range w.parked {
		if !p.c.paused && !p.c.crashed && p.c.steps < m.Steps {
			byClient[p.c] = append(byClient[p.c], p)
		}
	}
	for _, c := range w.clients {
		for _, s := range w.sleepers {
			if s.c == c && s.start && !c.paused && !c.crashed {
				out = append(out, choice{Action: Action{Kind: Start, Client: c.name}})
			}
		}
		ps := byClient[c]
		sort.SliceStable(ps, func(i, j int) bool {
			if ps[i].desc != ps[j].desc {
				return ps[i].desc < ps[j].desc
			}
			return ps[i].seq < ps[j].seq
		})
		for i, p := range ps {
			// The keys without the namespace: a choice is compared with
			// choices of other workers, whose namespaces differ.
			keys := make([]string, len(p.keys))
			for j, k := range p.keys {
				keys[j] = w.t.short(k)
			}
			out = append(
				out,
				choice{Action: Action{Kind: Run, Client: c.name, Index: i, Command: p.desc},
					keys: keys, write: p.write, p: p},
			)
		}
	}
	// Ticks: to each distinct deadline ahead.
	seen := map[time.Duration]bool{}
	var tickChoices []choice
	add := func(c *client, at time.Duration) {
		if seen[at] {
			return
		}
		seen[at] = true
		tickChoices = append(
			tickChoices,
			choice{Action: Action{Kind: Tick, Client: c.name, At: at}},
		)
	}
	for _, s := range w.sleepers {
		if s.deadline >= 0 && !s.c.paused && !s.c.crashed {
			add(s.c, max(s.deadline, w.now))
		}
	}
	for _, c := range w.clients {
		if c.paused && c.pausedUntil >= 0 && !c.crashed {
			add(c, c.pausedUntil)
		}
	}
	sort.SliceStable(
		tickChoices,
		func(i, j int) bool { return tickChoices[i].At < tickChoices[j].At },
	)
	if by, ok := w.deliverBy(m); ok {
		// The network's delay is bounded: the clock waits for the
		// commands in flight that would otherwise land too late.
		tickChoices = slices.DeleteFunc(tickChoices, func(c choice) bool { return c.At > by })
	}
	if ticks >= m.Ticks {
		tickChoices = nil
	}
	if len(out) == 0 && len(tickChoices) == 0 {
		return nil
	}
	out = append(out, tickChoices...)
	if faults >= m.Faults {
		return out
	}
	return append(out, w.enabledFaults(m)...)
}

// deliverBy is the time by which the commands in flight must have run
// under m.MaxDelay, and false when nothing bounds the clock: delays are
// unbounded, or no command is in flight. A command is in flight when
// its client may send it now (neither paused, crashed nor past its
// steps); a paused client has not sent its command yet. w.mu is held.
func (w *world) deliverBy(m Model) (time.Duration, bool) {
	if m.MaxDelay <= 0 {
		return 0, false
	}
	by, ok := time.Duration(0), false
	for _, p := range w.parked {
		if p.c.paused || p.c.crashed || p.c.steps >= m.Steps {
			continue
		}
		if t := p.since + m.MaxDelay; !ok || t < by {
			by, ok = t, true
		}
	}
	return by, ok
}

// hasWork reports whether c is still at something (parked or asleep).
// w.mu is held.
func (w *world) hasWork(c *client) bool {
	for _, p := range w.parked {
		if p.c == c {
			return true
		}
	}
	for _, s := range w.sleepers {
		if s.c == c {
			return true
		}
	}
	return false
}

// apply takes one action and waits for its effects to settle.
func (e *Explorer) apply(ctx context.Context, w *world, s *schedule, c choice) error {
	w.mu.Lock()
	now := w.now
	w.mu.Unlock()
	step := Step{Action: c.Action, ClockMS: now.Milliseconds()}
	switch c.Kind {
	case Run:
		w.mu.Lock()
		p := c.p
		i := slices.Index(w.parked, p)
		w.parked = slices.Delete(w.parked, i, i+1)
		w.running++
		w.lastRun = p
		w.stepNo = len(s.steps)
		p.c.steps++
		if p.lock && p.c.endHold {
			p.c.hold, p.c.endHold = nil, false
		}
		w.touch(p)
		w.mu.Unlock()
		p.go_ <- nil
		if err := w.settle(); err != nil {
			return err
		}
		w.mu.Lock()
		step.Text = p.desc + " → " + p.reply
		if held := now - p.since; held > 0 {
			step.HeldMS = held.Milliseconds()
			step.Text += fmt.Sprintf(" (sent at %s, landed at %s)", fmtAt(p.since), fmtAt(now))
		}
		w.mu.Unlock()
	case Tick:
		s.ticks++
		at := c.At
		keys, err := e.advance(ctx, w, at)
		if err != nil {
			return err
		}
		step.Text = fmt.Sprintf("clock %s → %s", fmtAt(now), fmtAt(at))
		if len(keys) > 0 {
			step.Text += "; lease ran out: " + strings.Join(keys, ", ")
			s.expired = append(s.expired, expiry{at: at, keys: keys})
		}
	case Start:
		w.mu.Lock()
		for _, sl := range slices.Clone(w.sleepers) {
			if sl.c.name == c.Client && sl.start {
				w.wake(sl, nil)
			}
		}
		w.mu.Unlock()
		if err := w.settle(); err != nil {
			return err
		}
		step.Text = c.Client + " starts a critical section"
	default:
		f := faultOf(c.Action)
		if f == nil {
			return fmt.Errorf("explore: no such action: %s", c.Action)
		}
		text, err := f.strike(ctx, e, w, s, c.Action)
		if err != nil {
			return err
		}
		step.Text = text
		s.faults++
	}
	s.steps = append(s.steps, step)
	s.actions = append(s.actions, c.Action)
	return nil
}

func (w *world) client(name string) *client {
	for _, c := range w.clients {
		if c.name == name {
			return c
		}
	}
	return nil
}

// advance moves the clock to at: leases in the namespace shorten (and
// those that ran out are deleted), pauses that end by then end, and
// sleeps due by then end. It returns the keys whose lease ran out.
func (e *Explorer) advance(ctx context.Context, w *world, at time.Duration) ([]string, error) {
	w.mu.Lock()
	d := at - w.now
	w.mu.Unlock()
	var keys []string
	if d > 0 {
		// The leases on the server shorten by d dilated. The real time
		// since the last advance also ran them down (by a Dilation-th of
		// it in virtual time): give it back all the same, so that a lease
		// loses exactly the virtual time d. A key written since then gets
		// back only the real time since its write, which this process
		// knows to within the command's round trip.
		w.mu.Lock()
		if w.unsteadyNow() {
			w.mu.Unlock()
			return nil, errUnsteady
		}
		written, last := w.written, w.lastTickServer
		w.written = map[string]window{}
		w.tickSent = time.Now()
		w.mu.Unlock()
		r, err := runTick(ctx, e.rdb, e.ns, w.dilate(d), last, written, "")
		if err != nil {
			return nil, fmt.Errorf("explore: advancing the clock: %w", err)
		}
		w.mu.Lock()
		w.lastTickServer = r.at
		w.shortest = 0
		gone, err := w.ticked(r, "")
		w.mu.Unlock()
		if err != nil {
			return nil, err
		}
		for _, k := range gone {
			keys = append(keys, e.target.short(k))
		}
		more, err := e.tickNodes(ctx, w, w.dilate(d), written)
		if err != nil {
			return nil, err
		}
		keys = append(keys, more...)
		sort.Strings(keys)
		if e.stall != nil {
			w.mu.Lock()
			left := w.undilate(w.shortest)
			w.mu.Unlock()
			e.stall(left)
		}
	}
	w.mu.Lock()
	w.now = max(w.now, at)
	for _, c := range w.clients {
		if c.paused && c.pausedUntil >= 0 && c.pausedUntil <= w.now {
			c.paused = false
			for _, p := range w.parked {
				if p.c == c {
					p.since = w.now // sent when the pause ends
				}
			}
		}
	}
	for _, s := range slices.Clone(w.sleepers) {
		if s.deadline >= 0 && s.deadline <= w.now && !s.c.paused && !s.c.crashed {
			w.wake(s, nil)
		}
	}
	w.mu.Unlock()
	w.poke()
	return keys, w.settle()
}

// tickScript shortens the lease of every volatile key matching ARGV[1] by
// ARGV[2] µs (of the server's time: virtual time dilated), less the real time
// that already ran it down: since ARGV[3] (the server's time of the last
// advance, µs; -1 for none to give back), or for the keys named in the triples
// ARGV[4], ARGV[5], ARGV[6], ... since their write, which happened between the
// two times given there (µs). It deletes the keys whose lease runs out, and
// returns the server's time (seconds, then µs, as TIME), the shortest lease
// left (ms, -1 for none), "1" when whether a lease ran out depends on when
// within its window a write happened (a window wider than 2 ms), else "0",
// then the keys deleted.
var tickScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local d = tonumber(ARGV[2])
local since = 0
if tonumber(ARGV[3]) >= 0 then since = now - tonumber(ARGV[3]) end
local win = {}
for i = 4, #ARGV, 3 do
	win[ARGV[i]] = {now - tonumber(ARGV[i + 2]), now - tonumber(ARGV[i + 1])}
end
local gone, unsteady, shortest = {}, '0', -1
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
	local p = redis.call('PTTL', k)
	if p > 0 then
		local lo, hi = since, since
		if win[k] then lo, hi = win[k][1], win[k][2] end
		local left = p * 1000 + (lo + hi) / 2 - d
		local half = (hi - lo) / 2
		if half > 1000 and math.abs(left - 1000) <= half then
			unsteady = '1'
		end
		if left < 1000 then
			redis.call('DEL', k)
			gone[#gone + 1] = k
		else
			local ms = math.floor(left / 1000)
			redis.call('PEXPIRE', k, ms)
			if shortest < 0 or ms < shortest then shortest = ms end
		end
	end
end
local out = {t[1], t[2], tostring(shortest), unsteady}
for _, k in ipairs(gone) do out[#out + 1] = k end
return out`)

// ticked takes in what an advance did on the one server (node "") or a
// node: the shortest lease left, and the keys whose lease ran out, which
// it returns qualified by node; errUnsteady when the advance could not
// tell. w.mu is held.
func (w *world) ticked(r tickResult, node string) ([]string, error) {
	if r.shortest > 0 && (w.shortest <= 0 || r.shortest < w.shortest) {
		w.shortest = r.shortest
	}
	if r.unsteady {
		return nil, errUnsteady
	}
	var gone []string
	for _, k := range r.gone {
		if node != "" {
			k += "@" + node
		}
		gone = append(gone, k)
		w.keyLog[k] = append(w.keyLog[k], "lease ran out at "+strconv.FormatInt(int64(w.now), 10))
	}
	return gone, nil
}

// tickResult is what tickScript answered.
type tickResult struct {
	at       int64         // the server's time, µs
	shortest time.Duration // the shortest lease left on the server (dilated); 0 for none
	unsteady bool
	gone     []string // the keys whose lease ran out
}

// runTick runs tickScript on rdb over the namespace ns: leases shorten by
// d (dilated: the server's time), less the real time since last (the server's time of the last
// advance, µs; -1 for none to give back) or, for the keys written since
// (those of node, "" for the one server), since their write.
func runTick(
	ctx context.Context, rdb redis.Scripter, ns string, d time.Duration, last int64,
	written map[string]window, node string,
) (tickResult, error) {
	args := []any{nsPattern(ns), d.Microseconds(), last}
	for k, win := range written {
		if key, n := splitNode(k); n == node {
			args = append(args, key, win.sent.UnixMicro(), win.replied.UnixMicro())
		}
	}
	res, err := tickScript.Run(ctx, rdb, nil, args...).StringSlice()
	if err != nil {
		return tickResult{}, err
	}
	var sec, usec, shortest int64
	if len(res) >= 4 {
		sec, err = strconv.ParseInt(res[0], 10, 64)
	}
	if err == nil && len(res) >= 4 {
		usec, err = strconv.ParseInt(res[1], 10, 64)
	}
	if err == nil && len(res) >= 4 {
		shortest, err = strconv.ParseInt(res[2], 10, 64)
	}
	if err != nil || len(res) < 4 {
		return tickResult{}, fmt.Errorf("reply %q", res)
	}
	return tickResult{
		at:       sec*1_000_000 + usec,
		shortest: time.Duration(max(shortest, 0)) * time.Millisecond,
		unsteady: res[3] == "1",
		gone:     res[4:],
	}, nil
}

// resetScript deletes every key matching ARGV[1], and returns the
// server's time (µs).
var resetScript = redis.NewScript(`
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end
local t = redis.call('TIME')
return tonumber(t[1]) * 1000000 + tonumber(t[2])`)

// unsteadyNow reports whether the schedule has become unsteady: the
// real time since the clock last advanced has run the shortest lease
// down (less a millisecond) on the server, which deletes it on real time
// though the virtual clock says it has not run out. Dilated, that takes
// a stall of the virtual time left times Dilation. Only the scheduler's
// goroutine (drive, advance) reads and writes these fields.
func (w *world) unsteadyNow() bool {
	if w.unsteady {
		return true
	}
	if w.shortest > 0 && time.Since(w.tickSent) > w.shortest-time.Millisecond {
		w.unsteady = true
	}
	return w.unsteady
}

// checkHolders records a mutual-exclusion violation when two clients hold
// the lock (one of them for writing) with leases that have not run out.
func (w *world) checkHolders(s *schedule) {
	if slices.ContainsFunc(
		s.violations,
		func(v Violation) bool { return v.Property == MutualExclusion },
	) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Holders of different keys (the market's locks of two listings) do
	// not exclude each other: look for two of one key.
	var hs []*client
	byKey := map[string][]*client{}
	for _, c := range w.holders() {
		byKey[c.hold.key] = append(byKey[c.hold.key], c)
	}
	for _, c := range w.holders() {
		group := byKey[c.hold.key]
		writer := false
		for _, d := range group {
			writer = writer || d.hold.write
		}
		if len(group) >= 2 && writer {
			hs = group
			break
		}
	}
	if hs == nil {
		return
	}
	var parts []string
	for _, c := range hs {
		parts = append(parts, fmt.Sprintf("%s (lease until %s)", c.name, w.leaseText(c)))
	}
	msg := fmt.Sprintf(
		"at %s, %s hold the lock at once, with leases that have not run out", fmtAt(w.now),
		strings.Join(parts, " and "),
	)
	i := len(s.steps) - 1
	s.violations = append(s.violations, Violation{Property: MutualExclusion, Message: msg, Step: i})
	if i >= 0 && s.steps[i].Violation == "" {
		s.steps[i].Violation = MutualExclusion
	}
}

// holders is the clients that hold a lease not yet run out. w.mu is held.
func (w *world) holders() []*client {
	var out []*client
	for _, c := range w.clients {
		if c.hold == nil {
			continue
		}
		if end := c.hold.end(); end < 0 || w.now < end {
			out = append(out, c)
		}
	}
	return out
}

func (w *world) leaseText(c *client) string {
	end := c.hold.end()
	if end < 0 {
		return "never (no expiry)"
	}
	return fmtAt(end)
}

// finish ends the schedule: every client still waiting is stopped, and
// the properties checked at the end are checked.
func (e *Explorer) finish(ctx context.Context, w *world, s *schedule, check bool) error {
	w.mu.Lock()
	s.end = w.now
	now := w.now
	w.stopping = true
	for _, p := range w.parked {
		p.go_ <- errStopped
		w.running++
	}
	w.parked = nil
	for _, sl := range slices.Clone(w.sleepers) {
		w.wake(sl, errStopped)
	}
	w.mu.Unlock()
	if err := w.awaitEnd(func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.live == 0
	}); err != nil {
		return err
	}
	s.cmdLog = w.cmdLog
	if !check || !s.complete {
		return nil
	}
	vs, err := e.target.checkEnd(ctx, e, w, now)
	if err != nil {
		return err
	}
	for _, v := range vs {
		v.Step = len(s.steps) - 1
		s.violations = append(s.violations, v)
		if v.Step >= 0 && s.steps[v.Step].Violation == "" {
			s.steps[v.Step].Violation = v.Property
		}
	}
	return nil
}

func FmtMS(ms int64) string {
	if ms%1000 == 0 {
		return fmt.Sprintf("t=%ds", ms/1000)
	}
	return fmt.Sprintf("t=%.3fs", float64(ms)/1000)
}

// FmtMS formats a virtual time.
