package sched

import (
	"bytes"
	"runtime"
	"strconv"
)

// A goroutine a client's code starts, however deep in a library, is that
// client's: the runtime's traceback names each goroutine's creator
// ("created by pkg.F in goroutine N"), so the explorer follows the
// creators back to a goroutine it tracks (a client's own, or one its Go
// started) and adopts the goroutine as that client's. An adopted
// goroutine's commands are held and ordered like the client's own; the
// scheduler learns that it is at rest from stack dumps (world.quiet), as
// it cannot count it in and out. A goroutine whose creators lead to no
// client (one started before the schedule, or a worker fed by a channel)
// stays outside: its commands end the search with ErrOutside.

// self is a goroutine: its id, and its creator's (0: none named, as for
// the main goroutine, or not read yet).
type self struct{ id, parent uint64 }

// whoAmI is the calling goroutine, its creator not read: that takes its
// whole stack trace (ownCreator), which world.gnum reads only for a
// goroutine it does not know yet.
func whoAmI() self { return self{id: goid()} }

// ownCreator is the id of the calling goroutine's creator, from its stack
// trace (0: none named).
func ownCreator() uint64 {
	buf := make([]byte, 4<<10)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) {
			return creatorIn(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// creatorIn is the id of the goroutine that the traceback text names as
// the creator ("created by F in goroutine N"), 0 when it names none.
func creatorIn(text []byte) uint64 {
	i := bytes.LastIndex(text, []byte("created by "))
	if i < 0 {
		return 0
	}
	line := text[i:]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	k := bytes.LastIndex(line, []byte(" in goroutine "))
	if k < 0 {
		return 0
	}
	n, _ := strconv.ParseUint(string(line[k+len(" in goroutine "):]), 10, 64)
	return n
}

// gnum is the number among its client's goroutines of the goroutine s,
// the caller (whoAmI), -1 for one that descends from no client. A
// goroutine seen for the first time whose creators lead to a client's is
// adopted as that client's next goroutine. w.mu is held.
func (w *world) gnum(s self) int {
	if g, ok := w.goroutines[s.id]; ok {
		return g.n
	}
	if s.parent == 0 {
		s.parent = ownCreator()
	}
	if s.parent != 0 {
		w.parents[s.id] = s.parent
	}
	anc, ok := w.ancestor(s.id, nil)
	if !ok {
		return -1
	}
	c := anc.c
	n := c.spawned
	c.spawned++
	w.goroutines[s.id] = gref{c: c, n: n, adopted: true}
	w.adopted++
	return n
}

// ancestor is the tracked goroutine (its client's own, one its Go
// started, or one adopted) that id is or descends from, following the
// creators recorded in w.parents; gs, a stack dump, is read when a
// creator is missing (nil: one is taken then). w.mu is held.
func (w *world) ancestor(id uint64, gs map[uint64]goroutineState) (gref, bool) {
	// Goroutine ids are never reused, so the creators form a forest; the
	// bound on the walk only guards against a traceback misread.
	for x, n := id, 0; x != 0 && n <= len(w.parents)+1; n++ {
		if g, ok := w.goroutines[x]; ok {
			return g, true
		}
		p, ok := w.parents[x]
		if !ok && gs == nil {
			gs = dumpGoroutines()
			w.learn(gs)
			p, ok = w.parents[x]
		}
		if !ok {
			break
		}
		x = p
	}
	return gref{}, false
}

// learn records the creators a stack dump names. w.mu is held.
func (w *world) learn(gs map[uint64]goroutineState) {
	for id, g := range gs {
		if g.parent != 0 {
			w.parents[id] = g.parent
		}
	}
}

// family is, of the goroutines of dump gs, those of the clients: the
// tracked ones still alive and every goroutine that descends from one,
// adopted or not yet seen by the explorer. w.mu is held.
func (w *world) family(gs map[uint64]goroutineState) map[uint64]gref {
	w.learn(gs)
	out := map[uint64]gref{}
	for id := range gs {
		if g, ok := w.ancestor(id, gs); ok {
			out[id] = g
		}
	}
	return out
}

// quiet reports, from the stack dump gs, whether every goroutine of the
// clients is at rest: waiting for the scheduler (parked at a command,
// asleep on its clock, waiting to start), or blocked on a channel, a
// select or a lock while one of its descendants waits for the scheduler
// (a library that sends from goroutines it starts and waits for their
// replies). A goroutine at work, in time.Sleep, or blocked with no
// descendant at the scheduler is not at rest: it may be waiting on the
// wall clock (world.look). w.mu is held.
func (w *world) quiet(gs map[uint64]goroutineState) bool {
	if w.bubble.delivering() || w.bubble != nil && !w.bubble.still(gs) {
		return false
	}
	fam := w.family(gs)
	atScheduler := map[uint64]bool{}
	for id := range fam {
		g := gs[id]
		switch {
		case g.onCPU():
			return false
		case g.atScheduler():
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
		case w.bubble != nil && g.durable:
			// In a bubble, a goroutine durably blocked waits for the
			// bubble's clock, or for another of its goroutines.
			waiting = waiting || !forDescendant
		case !g.waiting() || !forDescendant:
			return false
		}
	}
	w.timerWait = waiting
	return true
}

// waitsForDescendant reports whether a goroutine that id created, or one
// they created in turn, waits for the scheduler. w.mu is held.
func (w *world) waitsForDescendant(id uint64, fam map[uint64]gref, at map[uint64]bool) bool {
	for d := range at {
		for x, n := w.parents[d], 0; x != 0 && n < len(fam)+1; x, n = w.parents[x], n+1 {
			if x == id {
				return true
			}
		}
	}
	return false
}

// atScheduler reports whether g waits for the scheduler: in one of its
// waits, on the channel the scheduler answers on (not yet on its lock).
func (g goroutineState) atScheduler() bool {
	return g.kind() == "scheduler" && g.state == "chan receive"
}

// waiting reports whether g waits for another goroutine to send, close
// or signal: on a channel, a select, a WaitGroup or a Cond, not on a
// lock (held for a moment) nor in time.Sleep.
func (g goroutineState) waiting() bool {
	switch g.state {
	case "chan receive", "chan send", "select", "sync.WaitGroup.Wait", "sync.Cond.Wait":
		return g.kind() == "blocked"
	}
	return false
}

// onCPU reports whether g is on the processor, waits for it, or is in a
// system call or on the network: at work, whatever its frames say.
func (g goroutineState) onCPU() bool {
	switch g.state {
	case "running", "runnable", "syscall", "IO wait", "preempted":
		return true
	}
	return false
}

// counted reports whether the goroutine id is one world.running counts:
// a client's own, or one its Go started. w.mu is held.
func (w *world) counted(id uint64) bool {
	g, ok := w.goroutines[id]
	return ok && !g.adopted
}

// atRest reports whether every goroutine of the clients is at rest
// (world.quiet), from a stack dump taken now.
func (w *world) atRest() bool { return w.restsIn(dumpGoroutines) }

// restsIn is atRest, from the stack dump dump takes.
func (w *world) restsIn(dump func() map[uint64]goroutineState) bool {
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

// gone reports, once the clients' own goroutines have ended, whether the
// goroutines they started have too: one that outlives its schedule would
// send in the next.
func (w *world) gone() bool {
	w.mu.Lock()
	counted := w.adopted == 0 && w.bubble == nil
	w.mu.Unlock()
	if counted {
		return true // no goroutine of theirs sent: world.live says it all
	}
	gs := dumpGoroutines()
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.family(gs)) == 0
}
