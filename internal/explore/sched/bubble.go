package sched

import (
	"context"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/goroutine"
)

// Run from a test, a schedule's clients run in a testing/synctest bubble
// (WithBubbles): every goroutine they start is in it too, and time in it
// is a fake clock that moves only when every goroutine of the bubble is
// durably blocked. The explorer keeps that clock on its own: the
// bubble's first goroutine (the agent) waits for the scheduler on a
// channel made outside the bubble, which no goroutine of the bubble can
// end, so the fake clock stands still. To advance it, the agent sleeps
// (on a timer of the bubble) until the virtual time the scheduler chose;
// a timer of the clients' code that falls due first wakes its goroutine,
// and once that goroutine reaches the scheduler (a command, a sleep, its
// end) the advance stops there: the timer's firing is a step like any
// other. time.Sleep, time.After, timers, tickers and contexts' deadlines
// in the clients' code, however deep in a library, so run on the virtual
// clock (dilated, as Client.Lease is), with no line of it changed.
//
// A channel made in a bubble may be used only there, so what the
// scheduler sends to the clients' goroutines (a command's turn, the end
// of a sleep) the agent delivers.

// bubbleKey is the context key of WithBubbles' runner.
type bubbleKey struct{}

// WithBubbles returns ctx carrying run, which runs f in a new
// testing/synctest bubble and returns once f and every goroutine it
// started have ended (synctest.Test, for exploretest). A search under
// that context runs each schedule's clients in a bubble of their own.
func WithBubbles(ctx context.Context, run func(f func())) context.Context {
	return context.WithValue(ctx, bubbleKey{}, run)
}

func bubblesFrom(ctx context.Context) func(f func()) {
	run, _ := ctx.Value(bubbleKey{}).(func(f func()))
	return run
}

// deliver sends err on ch, a channel a client's goroutine waits on:
// through the agent when the clients run in a bubble.
func (w *world) deliver(ch chan error, err error) {
	b := w.bubble
	if b == nil {
		ch <- err
		return
	}
	b.mu.Lock()
	b.queue = append(b.queue, delivery{ch, err})
	b.pending++
	b.queued++
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
	// During an advance only the bubble's goroutines run: one that wakes
	// a sleeper (a context's deadline) stops the clock there.
	w.reached()
}

// delivering reports whether deliveries are queued or in progress.
func (b *bubble) delivering() bool {
	_, made := b.deliveries()
	return !made
}

// deliveries returns how many deliveries were ever queued, and whether
// every one has been made: its goroutine woken, or not yet at its
// receive. A stack dump tells where the clients stand only if every
// delivery queued before it was made before it, and none was queued
// while it was taken (world.atRest): the agent delivers on its own time,
// and a goroutine the dump shows waiting for the scheduler may have been
// sent its turn just after, while delivering already says no more.
func (b *bubble) deliveries() (queued uint64, made bool) {
	if b == nil {
		return 0, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queued, b.pending == 0
}

// reached tells an advance in progress that a goroutine of the clients
// reached the scheduler: the clock stops where it is.
func (w *world) reached() {
	b := w.bubble
	if b == nil || !b.advancing.Load() {
		return
	}
	select {
	case b.interrupt <- struct{}{}:
	default:
	}
}

// startBubble starts the schedule's clients, each by start, in a bubble
// that run makes, and its agent.
func (w *world) startBubble(run func(f func()), clients func(ctx context.Context)) {
	b := &bubble{
		kick:   make(chan struct{}, 1),
		jobs:   make(chan time.Duration),
		landed: make(chan time.Duration),
		done:   make(chan struct{}),
	}
	w.bubble = b
	ready := make(chan struct{})
	go func() {
		defer close(b.done)
		run(func() {
			ctx, cancel := context.WithCancel(context.Background())
			b.interrupt = make(chan struct{}, 1)
			b.mu.Lock()
			b.cancel = cancel
			b.mu.Unlock()
			start := time.Now()
			me := goroutine.ID()
			b.mu.Lock()
			b.agentID = me
			b.id = goroutine.Dump()[me].Bubble
			b.mu.Unlock()
			clients(ctx)
			close(ready)
			b.agent(start, cancel)
		})
	}()
	select {
	case <-ready:
	case <-b.done:
	}
}

// agent is the bubble's first goroutine: it delivers what the scheduler
// sends to the clients, and advances the clock when told, until told to
// end. Once the schedule is over (free) it lets the clock run, so that
// the clients' goroutines waiting on timers wake and end.
func (b *bubble) agent(start time.Time, cancel func()) {
	defer cancel()
	for {
		if b.deliverQueued() > 0 {
			continue
		}
		b.mu.Lock()
		quit, free := b.quit, b.free
		b.mu.Unlock()
		switch {
		case quit:
			return
		case free:
			cancel()
			time.Sleep(time.Hour)
			continue
		}
		select {
		case <-b.kick:
		case to := <-b.jobs:
			b.landed <- b.advance(start, to)
		}
	}
}

// deliverQueued makes the deliveries queued, and returns how many.
func (b *bubble) deliverQueued() int {
	b.mu.Lock()
	queue := b.queue
	b.queue = nil
	b.mu.Unlock()
	for _, d := range queue {
		d.ch <- d.err
	}
	if len(queue) > 0 {
		b.mu.Lock()
		b.pending -= len(queue)
		b.mu.Unlock()
	}
	return len(queue)
}

// advance moves the bubble's clock to to after start, or until a
// goroutine of the clients woken by a timer reaches the scheduler, and
// returns where it stopped.
func (b *bubble) advance(start time.Time, to time.Duration) time.Duration {
	select { // an interruption left from before
	case <-b.interrupt:
	default:
	}
	b.advancing.Store(true)
	defer b.advancing.Store(false)
	t := time.NewTimer(to - time.Since(start))
	defer t.Stop()
	select {
	case <-t.C:
	case <-b.interrupt:
	}
	return time.Since(start)
}

// set lets the bubble's clock run (free), or ends the agent (quit).
func (b *bubble) set(free, quit bool) {
	b.mu.Lock()
	b.free = b.free || free
	b.quit = b.quit || quit
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}
