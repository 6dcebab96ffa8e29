package sched

import (
	"github.com/lockmarket/lockmarket/internal/explore/goroutine"
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

// gnum is the number among its client's goroutines of the goroutine s,
// the caller (goroutine.WhoAmI), -1 for one that descends from no client. A
// goroutine seen for the first time whose creators lead to a client's is
// adopted as that client's next goroutine. w.mu is held.
func (w *world) gnum(s goroutine.Self) int {
	if g, ok := w.goroutines[s.ID]; ok {
		return g.n
	}
	if s.Parent == 0 {
		s.Parent = goroutine.OwnCreator()
	}
	if s.Parent != 0 {
		w.parents[s.ID] = s.Parent
	}
	anc, ok := w.ancestor(s.ID, nil)
	if !ok {
		return -1
	}
	c := anc.c
	n := c.spawned
	c.spawned++
	w.goroutines[s.ID] = gref{c: c, n: n, adopted: true}
	w.adopted++
	return n
}

// ancestor is the tracked goroutine (its client's own, one its Go
// started, or one adopted) that id is or descends from, following the
// creators recorded in w.parents; gs, a stack dump, is read when a
// creator is missing (nil: one is taken then). w.mu is held.
func (w *world) ancestor(id uint64, gs map[uint64]goroutine.State) (gref, bool) {
	// Goroutine ids are never reused, so the creators form a forest; the
	// bound on the walk only guards against a traceback misread.
	for x, n := id, 0; x != 0 && n <= len(w.parents)+1; n++ {
		if g, ok := w.goroutines[x]; ok {
			return g, true
		}
		p, ok := w.parents[x]
		if !ok && gs == nil {
			gs = goroutine.Dump()
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
func (w *world) learn(gs map[uint64]goroutine.State) {
	for id, g := range gs {
		if g.Parent != 0 {
			w.parents[id] = g.Parent
		}
	}
}

// family is, of the goroutines of dump gs, those of the clients: the
// tracked ones still alive and every goroutine that descends from one,
// adopted or not yet seen by the explorer. w.mu is held.
func (w *world) family(gs map[uint64]goroutine.State) map[uint64]gref {
	w.learn(gs)
	out := map[uint64]gref{}
	for id := range gs {
		if g, ok := w.ancestor(id, gs); ok {
			out[id] = g
		}
	}
	return out
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

// counted reports whether the goroutine id is one world.running counts:
// a client's own, or one its Go started. w.mu is held.
func (w *world) counted(id uint64) bool {
	g, ok := w.goroutines[id]
	return ok && !g.adopted
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
	gs := goroutine.Dump()
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.family(gs)) == 0
}
