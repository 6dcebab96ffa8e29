package sched

// Whether the clients are at rest: every goroutine parked at the
// scheduler, asleep on the clock, or waiting for one that is, as a
// stack dump shows them.

import "github.com/lockmarket/lockmarket/internal/explore/goroutine"

// quiet reports, from the stack dump gs, whether every goroutine of the
// clients is at rest: waiting for the scheduler (parked at a command,
// asleep on its clock, waiting to start), or blocked on a channel, a
// select or a lock while one of its descendants waits for the scheduler
// (a library that sends from goroutines it starts and waits for their
// replies). A goroutine at work, in time.Sleep, or blocked with no
// descendant at the scheduler is not at rest: it may be waiting on the
// wall clock (world.look). w.mu is held.
func (w *world) quiet(gs map[uint64]goroutine.State) bool {
	if w.bubble.delivering() || w.bubble != nil && !w.bubble.still(gs) {
		return false
	}
	fam := w.family(gs)
	atScheduler := map[uint64]bool{}
	for id := range fam {
		g := gs[id]
		switch {
		case g.OnCPU():
			return false
		case waitsForScheduler(g):
			atScheduler[id] = true
		}
	}
	waiting := false
	for id := range fam {
		g := gs[id]
		if atScheduler[id] {
			continue
		}
		forDescendant := w.waitsForDescendant(id, fam, atScheduler)
		switch {
		case w.bubble != nil && g.Durable:
			// In a bubble, a goroutine durably blocked waits for the
			// bubble's clock, or for another of its goroutines.
			waiting = waiting || !forDescendant
		case !g.Waiting() || g.Calls(explorerWaits) || !forDescendant:
			return false
		}
	}
	w.timerWait = waiting
	return true
}

// atRest reports whether every goroutine of the clients is at rest
// (world.quiet), from a stack dump taken now.
func (w *world) atRest() bool { return w.restsIn(goroutine.Dump) }

// restsIn is atRest, from the stack dump dump takes.
func (w *world) restsIn(dump func() map[uint64]goroutine.State) bool {
	w.mu.Lock()
	counted := w.adopted == 0 && w.bubble == nil
	w.mu.Unlock()
	if counted {
		return false // world.running says it all
	}
	// The dump is read only if no delivery was on its way while it was
	// taken (bubble.deliveries).
	before, made := w.bubble.deliveries()
	if !made {
		return false
	}
	gs := dump()
	if after, made := w.bubble.deliveries(); !made || after != before {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.quiet(gs)
}

// explorerWaits are the functions in which a client's goroutine waits
// for the scheduler.
// Their names are read from the functions themselves, so that they
// follow any move or rename.
var explorerWaits = []string{
	goroutine.FuncName((*world).gate),
	goroutine.FuncName(Clock.Sleep),
	goroutine.FuncName(Clock.AwaitStart),
}

// kindOf says what g is doing, for the scheduler: "scheduler" (waiting for
// it), or else its kind as goroutine.State.Kind says.
func kindOf(g goroutine.State) string {
	if g.Calls(explorerWaits) {
		return "scheduler"
	}
	return g.Kind()
}

// waitsForScheduler reports whether g waits for the scheduler: in one of
// its waits, on the channel the scheduler answers on (not yet on its
// lock).
func waitsForScheduler(g goroutine.State) bool {
	return g.Calls(explorerWaits) && g.Status == "chan receive"
}

// still reports, from the stack dump gs, whether every goroutine of the
// bubble but its agent is durably blocked (or waits for the scheduler):
// one a timer started (a context's deadline that cancels it) may be at
// work outside the clients' family.
func (b *bubble) still(gs map[uint64]goroutine.State) bool {
	b.mu.Lock()
	id, agent := b.id, b.agentID
	b.mu.Unlock()
	for gid, g := range gs {
		if g.Bubble == "" || g.Bubble != id || gid == agent {
			continue
		}
		if g.OnCPU() || !g.Durable && !waitsForScheduler(g) {
			return false
		}
	}
	return true
}
