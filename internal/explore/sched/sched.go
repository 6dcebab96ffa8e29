package sched

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/search"
	"github.com/lockmarket/lockmarket/locking"
)

// independent reports whether two enabled actions commute: actions of
// different clients that share no key one of them may write (each
// round trip's keys read apart from those it writes). A tick depends on everything; a fault commutes as its entry in
// faults says.
func independent(a, b Choice) bool {
	if f := faultOf(a.Action); f != nil {
		return f.commutes(a, b)
	}
	if f := faultOf(b.Action); f != nil {
		return f.commutes(b, a)
	}
	if a.Client == b.Client && !onOtherNodes(a, b) ||
		a.Kind == action.Tick || b.Kind == action.Tick {
		return false
	}
	if a.Kind != action.Run || b.Kind != action.Run {
		return true
	}
	if !a.write && !b.write {
		return true
	}
	// Two commands on one key commute unless one of them may write it.
	for _, k := range a.keys {
		for _, l := range b.keys {
			if k == "*" || l == "*" || k == l && (a.writes(k) || b.writes(l)) {
				return false
			}
		}
	}
	return true
}

// runOnce runs one schedule: the actions choose picks.
func (e *Explorer) runOnce(ctx context.Context, choose search.Chooser[Choice]) (*Schedule, error) {
	if err := e.reset(ctx); err != nil {
		return nil, err
	}
	w := &world{
		Target:         e.target,
		Epoch:          e.epoch,
		Factor:         e.Factor,
		stuckAfter:     e.stuckAfter,
		signal:         make(chan struct{}, 1),
		lastTickServer: e.resetAt,
		tickSent:       time.Now(),
		written:        map[string]window{},
		keyLog:         map[string][]string{},
		Control:        e.Redis,
		tokens:         map[string]string{},
		maxDelay:       e.model.MaxDelay,
		goroutines:     map[uint64]gref{},
		parents:        map[uint64]uint64{},
		ids:            map[string]int{},
	}
	if e.target.Traits.SteadySleeps {
		w.sleepAs = e.model.Retry
	}
	for i := range e.model.Clients {
		c := &clientState{
			world:   w,
			Name:    ClientName(i),
			Index:   i,
			Redis:   e.clients[i],
			spawned: 1,
			wall:    e.wall[i],
		}
		w.Clients = append(w.Clients, c)
		e.slots[i].set(c)
	}
	s := &Schedule{world: w}
	for _, c := range w.Clients {
		s.Clients = append(s.Clients, c.Name)
	}
	w.running, w.live = len(w.Clients), len(w.Clients)
	if run := bubblesFrom(ctx); run != nil {
		// The clients' context is made in the bubble: a select on its
		// end and a timer of the bubble blocks durably.
		w.startBubble(run, func(bctx context.Context) { e.startClients(ctx, bctx, w) })
	} else {
		e.startClients(ctx, ctx, w)
	}
	err := e.drive(ctx, w, s, choose)
	w.mu.Lock()
	if err == nil && w.missedScript {
		err = errScriptMissed
	}
	w.mu.Unlock()
	if errors.Is(err, errUnsteady) {
		e.Reruns.Add(1)
	}
	if ferr := e.finish(ctx, w, s, err == nil); err == nil {
		err = ferr
	}
	if err == nil {
		for _, c := range w.Clients {
			if c.failure != nil {
				return s, fmt.Errorf("%w: client %s: %w", ErrTarget, c.Name, c.failure)
			}
		}
	}
	return s, err
}

// startClients starts each client's goroutine, with a context made from
// cctx (the search's, or one made in the clients' bubble); ctx is the
// search's.
func (e *Explorer) startClients(ctx, cctx context.Context, w *world) {
	for _, c := range w.Clients {
		cctx := locking.WithClock(cctx, Clock{c})
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
}

// drive makes the schedule's choices until nothing is enabled.
func (e *Explorer) drive(
	ctx context.Context, w *world, s *Schedule, choose search.Chooser[Choice],
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
			s.Complete = true
			return nil
		}
		en := w.enabled(e.model, s.Faults, s.Ticks)
		if len(en) == 0 || depth >= e.model.MaxSteps {
			s.Complete = true
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
	for _, c := range w.Clients {
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
	return w.awaitRest(func() bool {
		w.mu.Lock()
		for _, s := range slices.Clone(w.sleepers) {
			if err := s.ctx.Err(); err != nil {
				w.wake(s, err)
			}
		}
		running, adopted, b := w.running, w.adopted, w.bubble
		w.mu.Unlock()
		switch {
		case running == 0 && adopted == 0 && b == nil:
			return true
		case running == 0 && b != nil:
			// In a bubble, what waits where is read from a dump at
			// every step: a goroutine may wait on a timer.
			return w.atRest()
		}
		return false
	}, w.atRest)
}

// enabled lists the actions the scheduler may take now, in a fixed order:
// commands by client, ticks by time, then faults.
func (w *world) enabled(m action.Model, faults, ticks int) []Choice {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Choice
	byClient := map[*clientState][]*parked{}
	for _, p := range w.parked {
		if !p.c.paused && !p.c.crashed && p.c.Steps < m.Steps {
			byClient[p.c] = append(byClient[p.c], p)
		}
	}
	for _, c := range w.Clients {
		for _, s := range w.sleepers {
			if s.c == c && s.start && !c.paused && !c.crashed {
				out = append(out, Choice{Action: action.Action{Kind: action.Start, Client: c.Name}})
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
				keys[j] = w.Target.Short(k)
			}
			// An EXEC reads whether a key its client WATCHes changed:
			// it does not commute with a write of one.
			for _, k := range w.execWatches(p) {
				keys = append(keys, w.Target.Short(k))
			}
			out = append(
				out,
				Choice{Action: action.Action{Kind: action.Run, Client: c.Name, Index: i, Command: p.desc},
					keys: keys, write: p.write, written: w.shorts(p.written), p: p},
			)
		}
	}
	// Ticks: to each distinct deadline ahead.
	seen := map[time.Duration]bool{}
	var tickChoices []Choice
	add := func(c *clientState, at time.Duration) {
		if seen[at] {
			return
		}
		seen[at] = true
		tickChoices = append(
			tickChoices,
			Choice{Action: action.Action{Kind: action.Tick, Client: c.Name, At: at}},
		)
	}
	for _, s := range w.sleepers {
		if s.deadline >= 0 && !s.c.paused && !s.c.crashed {
			add(s.c, max(s.deadline, w.Now))
		}
	}
	for _, c := range w.Clients {
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
		tickChoices = slices.DeleteFunc(tickChoices, func(c Choice) bool { return c.At > by })
	}
	if w.timerWait {
		// A goroutine of the clients waits on something of the bubble
		// (a timer, say): the clock may run until it wakes.
		tickChoices = append(tickChoices, Choice{Action: action.Action{Kind: action.Tick, Timer: true}})
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
func (w *world) deliverBy(m action.Model) (time.Duration, bool) {
	if m.MaxDelay <= 0 {
		return 0, false
	}
	by, ok := time.Duration(0), false
	for _, p := range w.parked {
		if p.c.paused || p.c.crashed || p.c.Steps >= m.Steps {
			continue
		}
		if t := p.since + m.MaxDelay; !ok || t < by {
			by, ok = t, true
		}
	}
	return by, ok
}

// apply takes one action and waits for its effects to settle.
func (e *Explorer) apply(ctx context.Context, w *world, s *Schedule, c Choice) error {
	w.mu.Lock()
	now := w.Now
	w.mu.Unlock()
	step := action.Step{Action: c.Action, ClockMS: now.Milliseconds()}
	switch c.Kind {
	case action.Run:
		w.mu.Lock()
		p := c.p
		i := slices.Index(w.parked, p)
		w.parked = slices.Delete(w.parked, i, i+1)
		if p.counted {
			w.running++
		}
		w.lastRun = p
		w.StepIndex = len(s.Steps)
		p.c.Steps++
		if p.g > 0 {
			p.c.FromStarted++
		}
		if p.lock && p.c.endHold {
			p.c.holding, p.c.endHold = nil, false
		}
		w.touch(p)
		w.mu.Unlock()
		if err := w.payBefore(ctx, p); err != nil {
			return err
		}
		released := time.Now()
		w.deliver(p.go_, nil)
		if err := w.settle(); err != nil {
			return err
		}
		w.noteRemovals(p)
		w.mu.Lock()
		if p.write && w.bubble != nil {
			// The command ran between its release and now, on this
			// process's real clock (its client's is the bubble's).
			win := window{sent: released, replied: time.Now()}
			for _, k := range p.keys {
				if k != "*" {
					w.written[k] = win
				}
			}
		}
		step.Text = p.desc + " → " + p.reply
		if held := now - p.since; held > 0 {
			step.HeldMS = held.Milliseconds()
			step.Text += fmt.Sprintf(" (sent at %s, landed at %s)", action.FormatAt(p.since), action.FormatAt(now))
		}
		w.mu.Unlock()
	case action.Tick:
		s.Ticks++
		at := c.At
		if c.Timer {
			at = now + e.timerHorizon()
			if by, ok := w.deliverBy(e.model); ok {
				at = min(at, max(by, now))
			}
		}
		at, fired, err := e.bubbleAdvance(w, at)
		if err != nil {
			return err
		}
		keys, err := e.advance(ctx, w, at)
		if err != nil {
			return err
		}
		step.Text = fmt.Sprintf("clock %s → %s", action.FormatAt(now), action.FormatAt(at))
		if fired {
			step.Text += "; a timer of the clients fired"
		}
		if len(keys) > 0 {
			step.Text += "; lease ran out: " + strings.Join(keys, ", ")
			s.Expired = append(s.Expired, expiry{At: at, Keys: keys})
		}
	case action.Start:
		w.mu.Lock()
		for _, sl := range slices.Clone(w.sleepers) {
			if sl.c.Name == c.Client && sl.start {
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
		s.Faults++
	}
	s.Steps = append(s.Steps, step)
	s.actions = append(s.actions, c.Action)
	return nil
}

// advance moves the clock to at: leases in the namespace shorten (and
// those that ran out are deleted), pauses that end by then end, and
// sleeps due by then end. It returns the keys whose lease ran out.
func (e *Explorer) advance(ctx context.Context, w *world, at time.Duration) ([]string, error) {
	w.mu.Lock()
	d := at - w.Now
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
		watched, owed := w.watchedKeys(), w.owed
		w.written = map[string]window{}
		w.tickSent = time.Now()
		w.mu.Unlock()
		r, err := runTick(ctx, e.Redis, e.KeyPrefix, w.Dilate(d), last, written, "", watched, owed)
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
			keys = append(keys, e.target.Short(k))
		}
		more, err := e.tickNodes(ctx, w, w.Dilate(d), written)
		if err != nil {
			return nil, err
		}
		keys = append(keys, more...)
		sort.Strings(keys)
		if e.Stall != nil {
			w.mu.Lock()
			left := w.Undilate(w.shortest)
			w.mu.Unlock()
			e.Stall(left)
		}
	}
	w.mu.Lock()
	w.Now = max(w.Now, at)
	for _, c := range w.Clients {
		if c.paused && c.pausedUntil >= 0 && c.pausedUntil <= w.Now {
			c.paused = false
			for _, p := range w.parked {
				if p.c == c {
					p.since = w.Now // sent when the pause ends
				}
			}
		}
	}
	for _, s := range slices.Clone(w.sleepers) {
		if s.deadline >= 0 && s.deadline <= w.Now && !s.c.paused && !s.c.crashed {
			w.wake(s, nil)
		}
	}
	w.mu.Unlock()
	w.poke()
	return keys, w.settle()
}

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
// the lock (one of them for writing) with leases that have not run out;
// for a semaphore (Lock.Permits), a holders violation when more
// clients than it has permits do.
func (w *world) checkHolders(s *Schedule) {
	property := w.Target.exclusion()
	if slices.ContainsFunc(
		s.Violations,
		func(v result.Violation) bool { return v.Property == property },
	) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Holders of different keys (the market's locks of two listings) do
	// not exclude each other: look for two of one key.
	var hs []*clientState
	byKey := map[string][]*clientState{}
	for _, c := range w.holders() {
		byKey[c.holding.Key] = append(byKey[c.holding.Key], c)
	}
	for _, c := range w.holders() {
		group := byKey[c.holding.Key]
		writer := false
		for _, d := range group {
			writer = writer || d.holding.Write
		}
		if w.Target.lock().Permits > 0 && len(group) > w.Target.lock().Permits ||
			w.Target.lock().Permits == 0 && len(group) >= 2 && writer {
			hs = group
			break
		}
	}
	if hs == nil {
		return
	}
	var parts []string
	for _, c := range hs {
		parts = append(parts, fmt.Sprintf("%s (lease until %s)", c.Name, w.leaseText(c)))
	}
	msg := fmt.Sprintf(
		"at %s, %s hold the lock at once, with leases that have not run out",
		action.FormatAt(w.Now),
		strings.Join(parts, " and "),
	)
	if w.Target.lock().Permits > 0 {
		msg = fmt.Sprintf(
			"at %s, %d clients hold the semaphore of %d permits at once, with leases that have "+
				"not run out: %s",
			action.FormatAt(w.Now), len(hs), w.Target.lock().Permits, strings.Join(parts, ", "),
		)
	}
	i := len(s.Steps) - 1
	s.Violations = append(s.Violations, result.Violation{Property: property, Message: msg, Step: i})
	if i >= 0 && s.Steps[i].Violation == "" {
		s.Steps[i].Violation = property
	}
}

// exclusion is the property that speaks of clients holding at once:
// Holders for a semaphore, MutualExclusion for any other lock.
func (t *Target) exclusion() string {
	if t.lock().Permits > 0 {
		return result.Holders
	}
	return result.MutualExclusion
}

// ExclusionNames returns check with each of MutualExclusion and Holders
// named as target t names the property (Holders for a semaphore,
// MutualExclusion for any other lock), once; the slice is new.
func (t *Target) ExclusionNames(check []string) []string {
	var out []string
	for _, p := range check {
		if p == result.MutualExclusion || p == result.Holders {
			p = t.exclusion()
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// holders is the clients that hold a lease not yet run out. w.mu is held.
func (w *world) holders() []*clientState {
	var out []*clientState
	for _, c := range w.Clients {
		if c.holding == nil {
			continue
		}
		if end := c.holding.End(); end < 0 || w.Now < end {
			out = append(out, c)
		}
	}
	return out
}

func (w *world) leaseText(c *clientState) string {
	end := c.holding.End()
	if end < 0 {
		return "never (no expiry)"
	}
	return action.FormatAt(end)
}

// finish ends the schedule: every client still waiting is stopped, and
// the properties checked at the end are checked.
func (e *Explorer) finish(ctx context.Context, w *world, s *Schedule, check bool) error {
	w.mu.Lock()
	s.End = w.Now
	w.stopping = true
	for _, p := range w.parked {
		w.deliver(p.go_, errStopped)
		if p.counted {
			w.running++
		}
	}
	w.parked = nil
	for _, sl := range slices.Clone(w.sleepers) {
		w.wake(sl, errStopped)
	}
	w.mu.Unlock()
	if w.bubble != nil {
		// The clock runs, so that goroutines waiting on timers wake to
		// the schedule's end; the bubble ends with them.
		w.bubble.set(true, false)
		defer w.bubble.end()
	}
	if err := w.awaitEnd(func() bool {
		w.mu.Lock()
		live := w.live
		w.mu.Unlock()
		return live == 0 && w.gone()
	}); err != nil {
		return err
	}
	s.CmdLog = w.CmdLog
	if !check || !s.Complete {
		return nil
	}
	// The end's reads see every lease as the virtual clock has it.
	if err := w.SettleLeases(ctx); err != nil {
		return err
	}
	vs, err := e.target.checkEnd(ctx, e, w)
	if err != nil {
		return err
	}
	for _, v := range vs {
		v.Step = len(s.Steps) - 1
		s.Violations = append(s.Violations, v)
		if v.Step >= 0 && s.Steps[v.Step].Violation == "" {
			s.Steps[v.Step].Violation = v.Property
		}
	}
	return nil
}

// reset deletes the namespace's keys, so that each schedule starts from
// the same empty state, and starts the virtual clock afresh. A target's
// Prepare sets up the state each schedule starts from; one that is
// PrepareOnce runs once, and its keys are restored in the reset after.
func (e *Explorer) reset(ctx context.Context) error {
	e.epoch = virtualEpoch
	args := append([]any{NamespacePattern(e.KeyPrefix)}, e.prepared...)
	at, err := plumbing.ResetScript.Run(ctx, e.Redis, nil, args...).Int64()
	if err != nil {
		return fmt.Errorf("explore: resetting the namespace: %w", err)
	}
	e.resetAt = at
	if err := e.resetNodes(ctx); err != nil {
		return fmt.Errorf("explore: resetting the namespace: %w", err)
	}
	if e.target.Workload.Prepare == nil || e.prepared != nil {
		return nil
	}
	if err := e.target.Workload.Prepare(ctx, e.Redis, e.KeyPrefix); err != nil {
		return fmt.Errorf("explore: setting up the target: %w", err)
	}
	if e.target.Workload.PrepareOnce && !e.unkept {
		kept, err := plumbing.SnapshotScript.Run(ctx, e.Redis, nil,
			NamespacePattern(e.KeyPrefix)).StringSlice()
		if err != nil {
			// A server on which the snapshot fails: Prepare runs
			// before every schedule, as for any other target.
			e.unkept = true
			return nil
		}
		e.prepared = make([]any, 0, len(kept))
		for _, k := range kept {
			e.prepared = append(e.prepared, k)
		}
	}
	return nil
}

// virtualEpoch is the time the clients' clock reads at the start of every
// schedule: the same in every run, so that every value made from it (a
// lease's end written into a key, ${now_ms}) is too.
var virtualEpoch = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)
