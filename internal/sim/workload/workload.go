// Package workload is the load that the simulator (internal/sim) measures
// and the fault runs (internal/failure/faults) put a market under: listers that
// list their items one after another at uniformly random prices, and
// buyers that each read the cheapest listings and buy one of them, chosen
// at random, at its listed price.
//
// The loops are written here once. What each operation records around
// itself (the simulator's tallies; the fault runs' history, operation IDs
// and retries of lost replies) is the caller's: the loops run every
// operation through Ops. A worker waits a moment after an operation of
// unknown outcome (market.OutcomeOf), or a read that failed, so that a
// server in trouble is not hammered; it checks its stop signal between
// operations, and the signal cuts its waits short.
package workload

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
)

// Shape is the load's parameters.
type Shape struct {
	// MinPrice and MaxPrice bound a listing's price, drawn uniformly.
	MinPrice, MaxPrice int64
	// Pick is K: a buyer buys one of the K cheapest listings.
	Pick int
	// ListWaitMin and ListWaitMax bound a lister's wait after each
	// listing, drawn uniformly in [ListWaitMin, ListWaitMax); zero: none.
	ListWaitMin, ListWaitMax time.Duration
	// EmptyPause is how long a buyer waits when it finds no listing.
	EmptyPause time.Duration
	// ErrorPause is how long a worker waits after an operation whose
	// outcome is unknown, or a read or preparation that failed.
	ErrorPause time.Duration
}

// Ops is one worker's operations on the market, with what the caller
// records around each. A lister uses Item and List, a buyer Listings and
// Purchase.
type Ops interface {
	// Item readies the lister's seq-th item to list (seq counts from 0),
	// granting it first if need be; ok is false when the lister has no
	// item left.
	Item(ctx context.Context, seq int) (item string, ok bool, err error)
	// List lists the lister's item at price.
	List(ctx context.Context, item string, price int64) error
	// Listings returns the k cheapest listings.
	Listings(ctx context.Context, k int) ([]market.Listing, error)
	// Purchase buys listing l at its listed price.
	Purchase(ctx context.Context, l market.Listing) error
}

// Price draws a listing's price from rng.
func (s Shape) Price(rng *rand.Rand) int64 {
	return s.MinPrice + rng.Int64N(s.MaxPrice-s.MinPrice+1)
}

// List is a lister's loop: until stop is closed or ops has no item left,
// ready the next item and list it at a random price drawn from rng.
func (s Shape) List(ctx context.Context, ops Ops, rng *rand.Rand, stop <-chan struct{}) {
	for seq := 0; !Requested(stop); seq++ {
		item, ok, err := ops.Item(ctx, seq)
		if err != nil {
			Pause(s.ErrorPause, stop)
			continue
		}
		if !ok {
			return
		}
		s.afterOp(ops.List(ctx, item, s.Price(rng)), stop)
		if s.ListWaitMax > s.ListWaitMin {
			Pause(s.ListWaitMin+time.Duration(rng.Int64N(int64(s.ListWaitMax-s.ListWaitMin))), stop)
		}
	}
}

// Buy is a buyer's loop: until stop is closed, read the Pick cheapest
// listings and buy one of them, chosen with rng, at its listed price.
func (s Shape) Buy(ctx context.Context, ops Ops, rng *rand.Rand, stop <-chan struct{}) {
	for !Requested(stop) {
		cheapest, err := ops.Listings(ctx, s.Pick)
		if err != nil {
			Pause(s.ErrorPause, stop)
			continue
		}
		if len(cheapest) == 0 {
			Pause(s.EmptyPause, stop)
			continue
		}
		s.afterOp(ops.Purchase(ctx, cheapest[rng.IntN(len(cheapest))]), stop)
	}
}

// afterOp waits ErrorPause after an operation whose outcome err leaves
// unknown.
func (s Shape) afterOp(err error, stop <-chan struct{}) {
	if market.OutcomeOf(err) == locking.Unknown {
		Pause(s.ErrorPause, stop)
	}
}
