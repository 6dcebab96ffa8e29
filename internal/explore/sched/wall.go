package sched

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/goroutine"
)

// ErrWallClock ends a search in which a client waited on the wall clock
// rather than the explorer's: it slept (time.Sleep), or waited on a timer
// or a channel the explorer does not own, for WallAfter of real time in
// one schedule. The virtual clock does not move while it waits, the
// leases on the server run down in real time, and a search of such code
// takes as long as its waits. The error names the client, its last
// command, the wait and how long it lasted, and the ways out.
var ErrWallClock = errors.New("explore: a client waits on the wall clock")

// WallAfter is how much real time one client may spend waiting on the
// wall clock, over the schedules of a search, before the search ends with
// ErrWallClock. Waits shorter than lookAfter are not seen.
var WallAfter = time.Second

// lookAfter is how long the scheduler waits for the clients with none of
// them moving before it looks at where their goroutines stand, and then
// how often it looks again.
const lookAfter = 25 * time.Millisecond

// probeAfter is how often the scheduler looks again, with no news from
// the clients, whether they are at rest: a goroutine adopted from the
// clients' code (ancestry.go) does not announce that it is.
const probeAfter = time.Millisecond

// look looks at where the clients' goroutines stand, the clients having
// not moved since stall began (real time), and credits each client that
// waits on the wall clock with the time since: one in time.Sleep, or one
// blocked on a channel, a select or a lock while no goroutine of a client
// is at work (on the processor, the network, a system call) and no other
// goroutine of the process is on the processor or waiting for it. A slow
// machine is at work, and is not credited. look returns ErrWallClock,
// with what to do, once a client has waited WallAfter in the search.
func (w *world) look(stall time.Time) error {
	gs := goroutine.Dump()
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	type wait struct {
		c *clientState
		g goroutine.State
	}
	var waits []wait
	busy := false
	fam := w.family(gs)
	at := map[uint64]bool{}
	for id := range fam {
		if waitsForScheduler(gs[id]) {
			at[id] = true
		}
	}
	for id, gr := range fam {
		c := gr.c
		g := gs[id]
		if g.Durable && w.bubble != nil {
			continue // it waits on the bubble's clock, which the explorer keeps
		}
		switch kindOf(g) {
		case "active":
			busy = true
		case "sleep":
			waits = append(waits, wait{c, g})
		case "blocked":
			if !w.waitsForDescendant(id, fam, at) {
				waits = append(waits, wait{c, g})
			}
		}
	}
	// A goroutine of the process that is on the processor, or waits for
	// it, may be about to free a client's blocked one (a context's
	// AfterFunc that wakes a sleeper, say): while there is one, only a
	// sleep counts.
	self := goroutine.ID()
	for id, g := range gs {
		if _, ok := fam[id]; !ok && id != self &&
			(g.Status == "runnable" || g.Status == "running") {
			busy = true
		}
	}
	for _, x := range waits {
		if kindOf(x.g) != "sleep" && busy {
			continue // it may be waiting for a goroutine at work
		}
		ww := x.c.wall
		from := stall
		if ww.until.After(from) {
			from = ww.until
		}
		if ww.stall != stall {
			ww.stall = stall
			ww.waits++
		}
		ww.total += now.Sub(from)
		ww.until, ww.what = now, x.g.Where()
		if ww.total >= WallAfter {
			err := w.wallError(x.c)
			w.fail(err)
			return err
		}
	}
	return nil
}

// wallError is the error for client c, which waited on the wall clock.
// w.mu is held.
func (w *world) wallError(c *clientState) error {
	last := "before its first command"
	if c.last != "" {
		last = "after its last command, " + c.last
	}
	waits := "in one wait"
	if c.wall.waits > 1 {
		waits = fmt.Sprintf("over %d waits", c.wall.waits)
	}
	return fmt.Errorf(
		"%w: client %s waited %.1f s of real time %s, %s: %s. The explorer's clock does not move "+
			"meanwhile (its leases on the server run down in real time), so it cannot order what "+
			"follows. Ways out: give the lock's context-aware call the client's context, which "+
			"carries its clock (locking.ClockFrom); wait with Client.Sleep; or make the lock try "+
			"once, or fewer times, without waiting between tries",
		ErrWallClock, c.Name, c.wall.total.Seconds(), waits, last, c.wall.what,
	)
}

// stuckError is ErrStuck with where each goroutine of the clients stood.
func (w *world) stuckError() error {
	gs := goroutine.Dump()
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	fam := w.family(gs)
	for _, c := range w.Clients {
		for id, gr := range fam {
			g := gs[id]
			if gr.c != c || kindOf(g) == "scheduler" {
				continue
			}
			parts = append(parts, fmt.Sprintf("client %s: %s", c.Name, g.Where()))
		}
	}
	if len(parts) == 0 {
		return fmt.Errorf("%w for %v", ErrStuck, w.stuckAfter)
	}
	return fmt.Errorf("%w for %v: %s", ErrStuck, w.stuckAfter, strings.Join(parts, "; "))
}

// await waits until done reports true, the scheduler's view of the
// clients having changed (w.signal), or fails: with the error that ends
// the schedule (world.fail), ErrWallClock, or ErrStuck once no client
// has moved for w.stuckAfter.
func (w *world) await(done func() bool) error { return w.awaitRest(done, nil) }

// awaitRest is await, which also calls rest, if set, once no client has
// moved for probeAfter: the stack dump's view of whether the clients are
// at rest, dearer than done's, for goroutines that do not announce it.
func (w *world) awaitRest(done, rest func() bool) error {
	// Most waits are over before they begin: no timer for them.
	if err := w.fatalErr(); err != nil {
		return err
	}
	if done() {
		return nil
	}
	stuck := time.NewTimer(w.stuckAfter)
	defer stuck.Stop()
	look := time.NewTimer(lookAfter)
	defer look.Stop()
	stall := time.Now()
	probe := time.NewTimer(probeAfter)
	defer probe.Stop()
	for {
		probe.Reset(probeAfter)
		select {
		case <-probe.C:
			// A goroutine the clients' code started with the go
			// statement comes to rest unannounced.
			if rest != nil && rest() {
				return nil
			}
		case <-w.signal:
			// Progress: the waits start again.
			stuck.Reset(w.stuckAfter)
			look.Reset(lookAfter)
			stall = time.Now()
		case <-look.C:
			if err := w.look(stall); err != nil {
				return err
			}
			look.Reset(lookAfter)
		case <-stuck.C:
			return w.stuckError()
		}
		if err := w.fatalErr(); err != nil {
			return err
		}
		if done() {
			return nil
		}
	}
}

// endAfterFailure is how long a failed schedule waits for its clients to
// end (one asleep on the wall clock may not soon).
const endAfterFailure = 2 * time.Second

// awaitEnd waits until done reports true, for the clients to end after
// the schedule: as await, but once the schedule has failed (world.fail)
// only for a short while, without looking for more.
func (w *world) awaitEnd(done func() bool) error {
	err := w.fatalErr()
	if err == nil {
		return w.await(done)
	}
	deadline := time.NewTimer(endAfterFailure)
	defer deadline.Stop()
	for !done() {
		select {
		case <-w.signal:
		case <-deadline.C:
			return err
		}
	}
	return err
}
