package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmarket/lockmarket/internal/halt"
	"github.com/lockmarket/lockmarket/internal/latency"
	"github.com/lockmarket/lockmarket/market"
)

// live holds the counters workers update while running.
type live struct {
	listed, bought, failed, retries, lockWaits atomic.Int64

	mu   sync.Mutex
	wait latency.Histogram // successful purchases' waits, for Progress
}

// recordWait adds a successful purchase's wait to the live histogram.
func (lv *live) recordWait(d time.Duration) {
	lv.mu.Lock()
	lv.wait.Record(d)
	lv.mu.Unlock()
}

// waits returns a copy of the live histogram.
func (lv *live) waits() *latency.Histogram {
	h := &latency.Histogram{}
	lv.mu.Lock()
	h.Merge(&lv.wait)
	lv.mu.Unlock()
	return h
}

// worker is one lister's or buyer's private tally, merged after it stops.
type worker struct {
	listed, failedLists, listRetries, listLockWaits int64
	bought, retries, lockWaits, lockLost, empty     int64
	execs                                           int64
	window                                          time.Duration
	failed                                          Failures
	wait                                            latency.Histogram
	firstErr                                        error
}

func (w *worker) noteErr(err error) {
	if w.firstErr == nil {
		w.firstErr = err
	}
}

// list is a lister's loop: create an item, list it at a random price.
func (w *worker) list(ctx context.Context, m *market.Market, s market.Strategy, seller string, rng *rand.Rand, stop <-chan struct{}, lv *live) {
	for seq := 0; !halt.Requested(stop); seq++ {
		item := seller + "-" + strconv.Itoa(seq)
		if err := m.GrantItem(ctx, seller, item); err != nil {
			w.noteErr(fmt.Errorf("create item %s: %w", item, err))
			halt.Pause(ErrorPause, stop)
			continue
		}
		price := MinPrice + rng.Int64N(MaxPrice-MinPrice+1)
		cost, err := m.List(ctx, s, seller, item, price)
		w.listRetries += int64(cost.Retries)
		w.listLockWaits += int64(cost.LockWaits)
		if cost.LockLost {
			w.lockLost++
		}
		if err != nil {
			w.failedLists++
			if !errors.Is(err, market.ErrContended) {
				w.noteErr(fmt.Errorf("list %s: %w", item, err))
				halt.Pause(ErrorPause, stop)
			}
			continue
		}
		w.listed++
		lv.listed.Add(1)
	}
}

// buy is a buyer's loop: read the k cheapest listings, buy one of them at
// random at its listed price.
func (w *worker) buy(ctx context.Context, m *market.Market, s market.Strategy, buyer string, k int64, rng *rand.Rand, stop <-chan struct{}, lv *live) {
	ctx = market.WithTrace(ctx, &market.Trace{Exec: func(window time.Duration) {
		w.execs++
		w.window += window
	}})
	for !halt.Requested(stop) {
		cheapest, _, err := m.Listings(ctx, 0, k)
		if err != nil {
			w.noteErr(fmt.Errorf("read listings: %w", err))
			halt.Pause(ErrorPause, stop)
			continue
		}
		if len(cheapest) == 0 {
			w.empty++
			halt.Pause(EmptyMarketPause, stop)
			continue
		}
		l := cheapest[rng.IntN(len(cheapest))]
		cost, err := m.Purchase(ctx, s, buyer, l.Seller, l.Item, l.Price)
		w.retries += int64(cost.Retries)
		w.lockWaits += int64(cost.LockWaits)
		lv.retries.Add(int64(cost.Retries))
		lv.lockWaits.Add(int64(cost.LockWaits))
		if cost.LockLost {
			w.lockLost++
		}
		if err == nil {
			w.bought++
			w.wait.Record(cost.Wait)
			lv.bought.Add(1)
			lv.recordWait(cost.Wait)
			continue
		}
		lv.failed.Add(1)
		switch {
		case errors.Is(err, market.ErrListingNotFound):
			w.failed.ListingNotFound++
		case errors.Is(err, market.ErrPriceChanged):
			w.failed.PriceChanged++
		case errors.Is(err, market.ErrInsufficientFunds):
			w.failed.InsufficientFunds++
		case errors.Is(err, market.ErrContended):
			w.failed.Contended++
		default:
			w.failed.Other++
			w.noteErr(fmt.Errorf("purchase %s: %w", market.Member(l.Item, l.Seller), err))
			halt.Pause(ErrorPause, stop)
		}
	}
}
