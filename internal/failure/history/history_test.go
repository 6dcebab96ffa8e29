package history

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
)

// ms is a recorded time in milliseconds.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func list(client int, seller, item string, price int64, call, ret int, o Outcome, r Reason) Op {
	return Op{Client: client, Kind: List, Seller: seller, Item: item, Price: price, Call: ms(call), Return: ms(ret), Outcome: o, Reason: r}
}

func buy(client int, buyer, seller, item string, price int64, call, ret int, o Outcome, r Reason) Op {
	return Op{Client: client, Kind: Purchase, Buyer: buyer, Seller: seller, Item: item, Price: price, Call: ms(call), Return: ms(ret), Outcome: o, Reason: r}
}

// world is the set-up of the table tests: seller s owns item i, buyers a
// and b have 100 each, s has 0.
func world() Setup {
	return Setup{Funds: map[string]int64{"s": 0, "a": 100, "b": 100}, Owner: map[string]string{"i": "s"}}
}

func state(funds map[string]int64, inv map[string][]string, listings map[string]int64) State {
	if inv == nil {
		inv = map[string][]string{}
	}
	if listings == nil {
		listings = map[string]int64{}
	}
	return State{Funds: funds, Inventory: inv, Listings: listings}
}

func TestCheck(t *testing.T) {
	listed := list(0, "s", "i", 10, 0, 1, Ok, ReasonNone)
	tests := []struct {
		name  string
		ops   []Op
		final State
		want  Anomalies
	}{
		{
			name:  "listed and bought once",
			ops:   []Op{listed, buy(1, "a", "s", "i", 10, 2, 3, Ok, ReasonNone), buy(2, "b", "s", "i", 10, 2, 4, Fail, ReasonListingNotFound)},
			final: state(map[string]int64{"s": 10, "a": 90, "b": 100}, map[string][]string{"a": {"i"}}, nil),
		},
		{
			name: "sold twice to overlapping buyers",
			ops:  []Op{listed, buy(1, "a", "s", "i", 10, 2, 5, Ok, ReasonNone), buy(2, "b", "s", "i", 10, 3, 6, Ok, ReasonNone)},
			final: state(map[string]int64{"s": 20, "a": 90, "b": 90},
				map[string][]string{"a": {"i"}, "b": {"i"}}, nil),
			want: Anomalies{NotLinearizable: 1, SoldTwice: 1},
		},
		{
			name:  "acknowledged sale lost",
			ops:   []Op{listed, buy(1, "a", "s", "i", 10, 2, 3, Ok, ReasonNone)},
			final: state(map[string]int64{"s": 0, "a": 100, "b": 100}, nil, map[string]int64{"i.s": 10}),
			want:  Anomalies{NotLinearizable: 1, LostSales: 1, FundsMismatch: 2},
		},
		{
			name:  "unknown purchase that happened",
			ops:   []Op{listed, buy(1, "a", "s", "i", 10, 2, 3, Unknown, ReasonNone)},
			final: state(map[string]int64{"s": 10, "a": 90, "b": 100}, map[string][]string{"a": {"i"}}, nil),
		},
		{
			name:  "unknown purchase that did not happen",
			ops:   []Op{listed, buy(1, "a", "s", "i", 10, 2, 3, Unknown, ReasonNone)},
			final: state(map[string]int64{"s": 0, "a": 100, "b": 100}, nil, map[string]int64{"i.s": 10}),
		},
		{
			name: "unknown purchase lost to a later acknowledged one",
			ops: []Op{listed, buy(1, "a", "s", "i", 10, 2, 3, Unknown, ReasonNone),
				buy(2, "b", "s", "i", 10, 5, 6, Ok, ReasonNone)},
			final: state(map[string]int64{"s": 10, "a": 100, "b": 90}, map[string][]string{"b": {"i"}}, nil),
		},
		{
			name: "unknown purchase retried by the same buyer",
			ops: []Op{listed, buy(1, "a", "s", "i", 10, 2, 3, Unknown, ReasonNone),
				buy(1, "a", "s", "i", 10, 4, 5, Ok, ReasonNone)},
			final: state(map[string]int64{"s": 10, "a": 90, "b": 100}, map[string][]string{"a": {"i"}}, nil),
		},
		{
			name: "unknown purchase that happened, and its retry too",
			ops: []Op{listed, buy(1, "a", "s", "i", 10, 2, 3, Unknown, ReasonNone),
				buy(1, "a", "s", "i", 10, 4, 5, Ok, ReasonNone)},
			final: state(map[string]int64{"s": 20, "a": 80, "b": 100}, map[string][]string{"a": {"i"}}, nil),
			want:  Anomalies{FundsMismatch: 2}, // the item model cannot see money
		},
		{
			name:  "buyer debited, seller not credited",
			ops:   []Op{listed, buy(1, "a", "s", "i", 10, 2, 3, Ok, ReasonNone)},
			final: state(map[string]int64{"s": 0, "a": 90, "b": 100}, map[string][]string{"a": {"i"}}, nil),
			want:  Anomalies{FundsMismatch: 1},
		},
		{
			name: "refused as not listed while listed",
			ops:  []Op{listed, buy(1, "a", "s", "i", 10, 2, 3, Fail, ReasonListingNotFound)},
			final: state(map[string]int64{"s": 0, "a": 100, "b": 100}, nil,
				map[string]int64{"i.s": 10}),
			want: Anomalies{NotLinearizable: 1},
		},
		{
			name:  "bought at another price",
			ops:   []Op{listed, buy(1, "a", "s", "i", 7, 2, 3, Ok, ReasonNone)},
			final: state(map[string]int64{"s": 7, "a": 93, "b": 100}, map[string][]string{"a": {"i"}}, nil),
			want:  Anomalies{NotLinearizable: 1},
		},
		{
			name:  "item vanished",
			ops:   []Op{listed},
			final: state(map[string]int64{"s": 0, "a": 100, "b": 100}, nil, nil),
			want:  Anomalies{NotLinearizable: 1},
		},
		{
			name:  "untouched item moved",
			ops:   nil,
			final: state(map[string]int64{"s": 0, "a": 100, "b": 100}, map[string][]string{"a": {"i"}}, nil),
			want:  Anomalies{NotLinearizable: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Check(world(), tt.ops, tt.final)
			if rep.Anomalies != tt.want {
				t.Errorf("violations = %+v, want %+v; details %q", rep.Anomalies, tt.want, rep.Details)
			}
			if rep.Undecided != 0 {
				t.Errorf("undecided = %d", rep.Undecided)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err    error
		want   Outcome
		reason Reason
	}{
		{nil, Ok, ReasonNone},
		{fmt.Errorf("x: %w", market.ErrListingNotFound), Fail, ReasonListingNotFound},
		{fmt.Errorf("x: %w", market.ErrPriceChanged), Fail, ReasonPriceChanged},
		{fmt.Errorf("x: %w", market.ErrItemNotOwned), Fail, ReasonItemNotOwned},
		{fmt.Errorf("x: %w", market.ErrInsufficientFunds), Fail, ReasonInsufficientFunds},
		{fmt.Errorf("%w: %w", market.ErrContended, locking.ErrNotAcquired), Fail, ReasonLockNotAcquired},
		// The market gives up under contention only before a commit is
		// sent (market.OutcomeOf): nothing was applied.
		{fmt.Errorf("%w: %w", market.ErrContended, context.DeadlineExceeded), Fail, ReasonOther},
		// A bare deadline may have ended a command in flight.
		{fmt.Errorf("x: %w", context.DeadlineExceeded), Unknown, ReasonNone},
		{fmt.Errorf("x: %w", redis.ErrClosed), Fail, ReasonOther},
		{errors.New("read tcp: i/o timeout"), Unknown, ReasonNone},
		{fmt.Errorf("x: %w", locking.ErrLockLost), Fail, ReasonOther},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.err), func(t *testing.T) {
			o, r := Classify(tt.err)
			if o != tt.want || r != tt.reason {
				t.Errorf("Classify(%v) = %v, %q; want %v, %q", tt.err, o, r, tt.want, tt.reason)
			}
		})
	}
}

// TestRecordedMarket records concurrent purchases of one listing on a
// real market, reads the state back and checks it: exactly one buyer wins
// and the checkers find nothing, for every strategy.
func TestRecordedMarket(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		for _, s := range market.Strategies {
			t.Run(string(s), func(t *testing.T) {
				ctx := context.Background()
				name := "hist-" + string(s)
				m, err := market.New(b.Client, name, market.WithLedger(market.NewLedger()))
				if err != nil {
					t.Fatal(err)
				}
				setup := NewSetup()
				users := []string{"seller", "b0", "b1", "b2"}
				for i, u := range users {
					funds := int64(0)
					if i > 0 {
						funds = 100
					}
					if _, err := m.CreateUser(ctx, u, u, funds); err != nil {
						t.Fatal(err)
					}
					setup.Funds[u] = funds
				}
				if err := m.GrantItem(ctx, "seller", "sword"); err != nil {
					t.Fatal(err)
				}
				setup.Owner["sword"] = "seller"
				rec := NewRecorder()
				p := rec.Invoke(0, List, "", "seller", "sword", 40)
				_, err = m.List(ctx, s, "seller", "sword", 40)
				if p.Complete(err) != Ok {
					t.Fatalf("list: %v", err)
				}
				var wg sync.WaitGroup
				for i, u := range users[1:] {
					wg.Go(func() {
						p := rec.Invoke(i+1, Purchase, u, "seller", "sword", 40)
						_, err := m.Purchase(ctx, s, u, "seller", "sword", 40)
						p.Complete(err)
					})
				}
				wg.Wait()
				final, err := ReadState(ctx, b.Client, name, users)
				if err != nil {
					t.Fatal(err)
				}
				rep := Check(setup, rec.Ops(), final)
				if rep.Anomalies.Total() != 0 {
					t.Errorf("violations %+v: %q", rep.Anomalies, rep.Details)
				}
				if rep.Ok != 2 || rep.Failed != 2 || rep.Unknown != 0 {
					t.Errorf("counts %+v, want 2 ok (list and one purchase), 2 failed", rep.Counts)
				}
				if final.Funds["seller"] != 40 {
					t.Errorf("seller has %d, want 40", final.Funds["seller"])
				}
			})
		}
	})
}
