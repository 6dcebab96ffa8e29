package sched

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/goroutine"
)

// TestRestWaitsForDeliveries checks that a stack dump taken while the
// bubble's agent delivers a client its turn is not read as a rest: the
// dump shows the client waiting for the scheduler, though it has been
// woken, and the next choices would be listed without its next step (a
// replay that then finds it there goes another way). Once the client
// waits again with nothing on its way, a dump is read as a rest.
func TestRestWaitsForDeliveries(t *testing.T) {
	w := &world{
		signal:     make(chan struct{}, 1),
		goroutines: map[uint64]gref{},
		parents:    map[uint64]uint64{},
		bubble:     &bubble{kick: make(chan struct{}, 1)},
	}
	c := &clientState{world: w, Name: "A", spawned: 1}
	w.Clients = []*clientState{c}
	w.running, w.live = 1, 1
	ended := make(chan error, 1)
	go func() {
		w.track(c, 0)
		for range 3 {
			if err := (Clock{c}).AwaitStart(context.Background()); err != nil {
				ended <- err
				return
			}
		}
		ended <- nil
	}()
	// rests waits until the client waits to start and a dump says so.
	rests := func(what string) {
		t.Helper()
		for start := time.Now(); ; time.Sleep(time.Millisecond) {
			w.mu.Lock()
			waiting := len(w.sleepers) == 1
			w.mu.Unlock()
			if waiting && w.atRest() {
				return
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("%s: the client never came to rest", what)
			}
		}
	}
	wake := func(err error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.sleepers) != 1 {
			t.Fatalf("%d clients wait to start, want 1", len(w.sleepers))
		}
		w.wake(w.sleepers[0], err)
	}

	// The agent hands the client its turn while a dump is being taken:
	// the turn queued before the dump, or queued during it too.
	for _, tc := range []struct {
		name   string
		before bool
	}{{"queued before the dump", true}, {"queued during the dump", false}} {
		rests("waiting to start, " + tc.name)
		if tc.before {
			wake(nil)
		}
		racing := func() map[uint64]goroutine.State {
			gs := goroutine.Dump()
			if !tc.before {
				wake(nil)
			}
			w.bubble.deliverQueued()
			return gs
		}
		if w.restsIn(racing) {
			t.Errorf("%s: a dump taken while a turn was on its way was read as a rest",
				tc.name)
		}
		w.bubble.deliverQueued() // the agent's work, if the dump was not taken
	}
	rests("waiting to start at the end")
	wake(errStopped)
	w.bubble.deliverQueued()
	if err := <-ended; !errors.Is(err, errStopped) {
		t.Errorf("the client ended with %v, want errStopped", err)
	}
}
