package workload_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/sim/workload"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
)

// script is a worker's operations played from a script: the listings it
// shows, the answers its operations give, and what the loops asked for.
// It closes stop after its limit of operations.
type script struct {
	mu       sync.Mutex
	items    []string
	shown    []market.Listing
	answer   func(n int) error // the n-th operation's answer (n from 1)
	limit    int
	stop     chan struct{}
	listed   map[string]int64
	bought   []market.Listing
	asked    []int       // the k of each Listings
	readAt   []time.Time // when each Listings came
	answered []time.Time // when each operation was answered
}

func (s *script) op(at time.Time) error {
	s.answered = append(s.answered, at)
	n := len(s.answered)
	if n == s.limit {
		close(s.stop)
	}
	if s.answer == nil {
		return nil
	}
	return s.answer(n)
}

func (s *script) Item(_ context.Context, seq int) (string, bool, error) {
	if seq >= len(s.items) {
		return "", false, nil
	}
	return s.items[seq], true, nil
}

func (s *script) List(_ context.Context, item string, price int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listed[item] = price
	return s.op(time.Now())
}

func (s *script) Listings(_ context.Context, k int) ([]market.Listing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, k)
	s.readAt = append(s.readAt, time.Now())
	return s.shown[:min(k, len(s.shown))], nil
}

func (s *script) Purchase(_ context.Context, l market.Listing) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bought = append(s.bought, l)
	return s.op(time.Now())
}

var shape = workload.Shape{MinPrice: 5, MaxPrice: 9, Pick: 3, EmptyPause: time.Millisecond, ErrorPause: time.Hour}

// errLost is an error whose outcome is unknown: the reply was lost.
var errLost = errors.New("i/o timeout")

func TestListerListsEachItemOnce(t *testing.T) {
	if market.OutcomeOf(errLost) != locking.Unknown {
		t.Fatal("the test's lost reply is not of unknown outcome")
	}
	items := []string{"a", "b", "c", "d"}
	s := &script{items: items, listed: map[string]int64{}, stop: make(chan struct{}),
		answer: func(int) error { return market.ErrContended }} // refusals: no wait
	shape.List(context.Background(), s, rand.New(rand.NewPCG(1, 2)), s.stop)
	if len(s.listed) != len(items) || len(s.answered) != len(items) {
		t.Fatalf("listed %v in %d operations, want each of %v once", s.listed, len(s.answered), items)
	}
	for item, p := range s.listed {
		if p < shape.MinPrice || p > shape.MaxPrice {
			t.Errorf("%s listed at %d, outside %d..%d", item, p, shape.MinPrice, shape.MaxPrice)
		}
	}
}

func TestBuyerBuysOneOfTheCheapest(t *testing.T) {
	var shown []market.Listing
	for i := range 5 {
		shown = append(shown, market.Listing{Item: fmt.Sprint("it", i), Seller: "s", Price: int64(10 + i)})
	}
	s := &script{shown: shown, limit: 50, stop: make(chan struct{}),
		answer: func(n int) error { // answers of every kind but a lost reply: no wait
			return []error{nil, market.ErrListingNotFound, market.ErrPriceChanged, market.ErrContended}[n%4]
		}}
	shape.Buy(context.Background(), s, rand.New(rand.NewPCG(1, 2)), s.stop)
	if len(s.bought) != s.limit {
		t.Fatalf("%d purchases, want %d", len(s.bought), s.limit)
	}
	seen := map[string]bool{}
	for _, l := range s.bought {
		if !slices.Contains(shown[:shape.Pick], l) {
			t.Fatalf("bought %+v, not one of the %d cheapest", l, shape.Pick)
		}
		seen[l.Item] = true
	}
	if len(seen) != shape.Pick {
		t.Errorf("50 purchases chose among %v, want all %d cheapest", seen, shape.Pick)
	}
	if slices.ContainsFunc(s.asked, func(k int) bool { return k != shape.Pick }) {
		t.Errorf("asked for %v listings, want %d each time", s.asked, shape.Pick)
	}
}

// TestWaitAfterUnknownOutcome: after a purchase whose reply was lost the
// buyer waits ErrorPause before its next read, which a close of stop cuts
// short.
func TestWaitAfterUnknownOutcome(t *testing.T) {
	sh := shape
	sh.ErrorPause = 30 * time.Millisecond
	s := &script{shown: []market.Listing{{Item: "it", Seller: "s", Price: 1}}, limit: 2, stop: make(chan struct{}),
		answer: func(n int) error {
			if n == 1 {
				return errLost
			}
			return nil
		}}
	sh.Buy(context.Background(), s, rand.New(rand.NewPCG(1, 2)), s.stop)
	if len(s.readAt) != 2 {
		t.Fatalf("%d reads, want 2", len(s.readAt))
	}
	if gap := s.readAt[1].Sub(s.answered[0]); gap < sh.ErrorPause {
		t.Errorf("the read after a lost reply came %v after it, want at least %v", gap, sh.ErrorPause)
	}

	sh.ErrorPause = time.Hour
	s = &script{shown: s.shown, limit: 1, stop: make(chan struct{}), answer: func(int) error { return errLost }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sh.Buy(context.Background(), s, rand.New(rand.NewPCG(1, 2)), s.stop)
	}()
	<-done // the hour's wait was cut short by the close of stop
}
