// Package pausedholder is the paused-holder scenario, the lesson of every
// lease lock, which the gallery stages for recipes 6 and 11 and the pause
// faults run in real time: a seller has listed one item; buyer A takes
// the lock for its purchase, checks the listing and its funds, and stops
// just before its commit; A's lease runs out while it is stopped; buyer B
// buys the same listing; then A goes on and commits. A lock whose commit
// is not fenced lets both of them buy the item; WATCH, the Lua script and
// a fenced lock refuse A's commit.
//
// The sequence (Trial) and the holder stopped by a hook in its own
// goroutine (HookHolder) are here once. How the lease runs out (a wait
// past it, or an expiry made to happen), what B's purchase records around
// itself, and a holder of another kind (a whole process stopped by
// SIGSTOP, in the fault runs) are the caller's.
package pausedholder

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lockmarket/lockmarket/internal/timeline"
	"github.com/lockmarket/lockmarket/market"
)

// Cast names the scenario's users and its listing.
type Cast struct {
	// Seller has listed Item at Price; Holder is buyer A, Rival buyer B.
	Seller, Holder, Rival, Item string
	Price                       int64
}

// Funds are the users' funds at the start: the seller has none, each
// buyer ten times the item's price.
func (c Cast) Funds() map[string]int64 {
	return map[string]int64{c.Seller: 0, c.Holder: 10 * c.Price, c.Rival: 10 * c.Price}
}

// Holder is buyer A.
type Holder interface {
	// Start begins A's purchase and returns once A is stopped at its
	// commit point (or has finished without reaching it).
	Start(ctx context.Context) error
	// Resume lets A go on and returns what its purchase came to.
	Resume(ctx context.Context) (Outcome, error)
}

// Outcome is what a purchase came to: its error, and whether the market
// saw its lock lost (market.Cost.LockLost).
type Outcome struct {
	Err      error
	LockLost bool
}

// Trial is one run of the scenario.
type Trial struct {
	// Holder is A.
	Holder Holder
	// Lapse makes A's lease run out while A is stopped.
	Lapse func(ctx context.Context) error
	// Rival is B's purchase of the listing, made while A is stopped; it
	// keeps what B's purchase came to.
	Rival func(ctx context.Context)
}

// Run plays the trial: A starts and stops at its commit, its lease lapses,
// B buys, A goes on. It returns what A's purchase came to; an error is a
// failure of the trial itself (A could not be started, stopped or
// resumed, or the lease not made to lapse), after which A has been let go
// on.
func (t Trial) Run(ctx context.Context) (Outcome, error) {
	if err := t.Holder.Start(ctx); err != nil {
		return Outcome{}, err
	}
	if err := t.Lapse(ctx); err != nil {
		_, rerr := t.Holder.Resume(ctx)
		return Outcome{}, errors.Join(err, rerr)
	}
	t.Rival(ctx)
	return t.Holder.Resume(ctx)
}

// HookHolder is a holder in this process: its purchase runs in a
// goroutine of its own and stops in the hook the market calls just before
// a commit (WithBeforeCommit), the first time only (a WATCH retry goes
// on).
type HookHolder struct {
	m       *market.Market
	s       market.Strategy
	cast    Cast
	why     string
	giveUp  time.Duration
	paused  chan struct{} // closed when the hook stops
	goOn    chan struct{} // closed by letGo
	letGo   func()
	done    chan struct{} // closed when the purchase returned
	outcome Outcome
}

// NewHookHolder returns A buying cast's listing on m under s. At its
// commit point it records why it stops (on the timeline its context
// carries, if any) and waits until Resume, or until giveUp has passed
// since it stopped when giveUp is not 0: a holder whose lease a watchdog
// keeps renewing would otherwise keep B waiting for the lock, and B A for
// its turn.
func NewHookHolder(m *market.Market, s market.Strategy, cast Cast, why string, giveUp time.Duration) *HookHolder {
	h := &HookHolder{m: m, s: s, cast: cast, why: why, giveUp: giveUp,
		paused: make(chan struct{}), goOn: make(chan struct{}), done: make(chan struct{})}
	h.letGo = sync.OnceFunc(func() { close(h.goOn) })
	return h
}

// Start begins the purchase and returns once it is stopped at its commit
// point, or has returned without reaching it. If ctx ends first, it lets
// the purchase go on, waits for it, and returns ctx.Err().
func (h *HookHolder) Start(ctx context.Context) error {
	var once sync.Once
	stop := func(ctx context.Context, _, op string) {
		if op == "purchase" {
			once.Do(func() { h.stop(ctx) })
		}
	}
	c := h.cast
	go func() {
		defer close(h.done)
		cost, err := h.m.Purchase(WithBeforeCommit(ctx, stop), h.s, c.Holder, c.Seller, c.Item, c.Price)
		h.outcome = Outcome{Err: err, LockLost: cost.LockLost}
	}()
	select {
	case <-h.paused:
	case <-h.done:
	case <-ctx.Done():
		h.letGo()
		<-h.done
		return ctx.Err()
	}
	return nil
}

// stop is the hook's stop at the commit point.
func (h *HookHolder) stop(ctx context.Context) {
	r, client, traced := timeline.From(ctx)
	if traced {
		r.Add(client, timeline.PauseStart, "%s", h.why)
	}
	close(h.paused)
	var giveUp <-chan time.Time
	if h.giveUp > 0 {
		t := time.NewTimer(h.giveUp)
		defer t.Stop()
		giveUp = t.C
	}
	select {
	case <-h.goOn:
	case <-giveUp:
	case <-ctx.Done():
	}
	if traced {
		r.Add(client, timeline.PauseEnd, "goes on")
	}
}

// Resume lets the purchase go on, waits for it to return, and returns
// what it came to. The purchase runs under the context Start was given.
func (h *HookHolder) Resume(context.Context) (Outcome, error) {
	h.letGo()
	<-h.done
	return h.outcome, nil
}
