package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
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

// ops are a worker's operations on its market under its strategy
// (workload.Ops), counted into its tally and the live counters.
type ops struct {
	w  *worker
	m  *market.Market
	s  market.Strategy
	id string // the lister's or buyer's user ID
	lv *live
}

// Item creates the lister's seq-th item in its inventory.
func (o ops) Item(ctx context.Context, seq int) (string, bool, error) {
	item := o.id + "-" + strconv.Itoa(seq)
	if err := o.m.GrantItem(ctx, o.id, item); err != nil {
		o.w.noteErr(fmt.Errorf("create item %s: %w", item, err))
		return "", false, err
	}
	return item, true, nil
}

func (o ops) List(ctx context.Context, item string, price int64) error {
	w := o.w
	cost, err := o.m.List(ctx, o.s, o.id, item, price)
	w.listRetries += int64(cost.Retries)
	w.listLockWaits += int64(cost.LockWaits)
	if cost.LockLost {
		w.lockLost++
	}
	if err != nil {
		w.failedLists++
		if !errors.Is(err, market.ErrContended) {
			w.noteErr(fmt.Errorf("list %s: %w", item, err))
		}
		return err
	}
	w.listed++
	o.lv.listed.Add(1)
	return nil
}

func (o ops) Listings(ctx context.Context, k int) ([]market.Listing, error) {
	cheapest, _, err := o.m.Listings(ctx, 0, int64(k))
	if err != nil {
		o.w.noteErr(fmt.Errorf("read listings: %w", err))
		return nil, err
	}
	if len(cheapest) == 0 {
		o.w.empty++
	}
	return cheapest, nil
}

func (o ops) Purchase(ctx context.Context, l market.Listing) error {
	w, lv := o.w, o.lv
	cost, err := o.m.Purchase(ctx, o.s, o.id, l.Seller, l.Item, l.Price)
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
		return nil
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
		w.noteErr(fmt.Errorf("purchase %s: %w", markettrace.Member(l.Item, l.Seller), err))
	}
	return err
}

// traced returns ctx with a trace that counts the worker's EXECs and
// their conflict windows.
func (w *worker) traced(ctx context.Context) context.Context {
	return markettrace.WithTrace(ctx, &markettrace.Trace{Exec: func(window time.Duration) {
		w.execs++
		w.window += window
	}})
}
