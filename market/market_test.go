package market_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// forEach runs fn for every strategy in every client form on both
// backends, each on a fresh market.
func forEach(t *testing.T, fn func(t *testing.T, b *redistest.Backend, m *market.Market, s market.Strategy)) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		for _, f := range markettrace.ClientForms {
			for _, s := range market.Strategies {
				t.Run(string(f)+"/"+string(s), func(t *testing.T) {
					m, err := newMarket(b.Client, "t"+string(f)+string(s), markettrace.WithClient(f))
					if err != nil {
						t.Fatal(err)
					}
					if markettrace.ClientFormOf(m) != f {
						t.Fatalf("client form %q, want %q", markettrace.ClientFormOf(m), f)
					}
					fn(t, b, m, s)
				})
			}
		}
	})
}

// newMarket is market.New with a ledger, so that audit checks every
// invariant, sales included.
func newMarket(rdb redis.UniversalClient, name string, opts ...market.Option) (*market.Market, error) {
	return market.New(rdb, name, append([]market.Option{market.WithLedger(market.NewLedger())}, opts...)...)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func user(t *testing.T, m *market.Market, id string, funds int64) {
	t.Helper()
	_, err := m.CreateUser(context.Background(), id, id, funds)
	must(t, err)
}

// listed creates seller's item and lists it under s.
func listed(t *testing.T, m *market.Market, s market.Strategy, seller, item string, price int64) {
	t.Helper()
	ctx := context.Background()
	must(t, m.GrantItem(ctx, seller, item))
	_, err := m.List(ctx, s, seller, item, price)
	must(t, err)
}

func audit(t *testing.T, m *market.Market) {
	t.Helper()
	rep, err := m.Audit(context.Background())
	must(t, err)
	if rep.Total() != 0 {
		t.Fatalf("audit: %+v %v", rep.Violations, rep.Details)
	}
	if !rep.LedgerChecked {
		t.Fatal("audit did not check the ledger: the market has none")
	}
}

func TestPurchaseMovesMoneyAndItem(t *testing.T) {
	forEach(t, func(t *testing.T, b *redistest.Backend, m *market.Market, s market.Strategy) {
		ctx := context.Background()
		user(t, m, "Frank", 43)
		user(t, m, "Bill", 125)
		listed(t, m, s, "Bill", "ItemM", 35)

		ls, total, err := m.Listings(ctx, 0, 10)
		must(t, err)
		if total != 1 || len(ls) != 1 || ls[0] != (market.Listing{Item: "ItemM", Seller: "Bill", Price: 35}) {
			t.Fatalf("listings = %v (total %d)", ls, total)
		}
		execs := 0
		tctx := markettrace.WithTrace(ctx, &markettrace.Trace{Exec: func(time.Duration) { execs++ }})
		cost, err := m.Purchase(tctx, s, "Frank", "Bill", "ItemM", 35)
		must(t, err)
		if cost.Retries != 0 || cost.LockWaits != 0 || cost.Wait <= 0 {
			t.Fatalf("uncontended cost = %+v", cost)
		}
		// Watch times its one EXEC's conflict window; nothing else WATCHes
		// the market.
		if wantExecs := map[bool]int{true: 1, false: 0}[s == market.Watch]; execs != wantExecs {
			t.Fatalf("%d EXECs timed, want %d", execs, wantExecs)
		}
		frank, err := m.GetUser(ctx, "Frank")
		must(t, err)
		bill, err := m.GetUser(ctx, "Bill")
		must(t, err)
		if frank.Funds != 8 || bill.Funds != 160 {
			t.Fatalf("funds Frank=%d Bill=%d, want 8 and 160", frank.Funds, bill.Funds)
		}
		if len(frank.Inventory) != 1 || frank.Inventory[0] != "ItemM" || len(bill.Inventory) != 0 {
			t.Fatalf("inventories Frank=%v Bill=%v", frank.Inventory, bill.Inventory)
		}
		if _, total, _ := m.Listings(ctx, 0, 10); total != 0 {
			t.Fatalf("listing still there")
		}
		// Locks are released.
		if n := b.Client.Exists(ctx, markettrace.KeysOf(m).MarketLock(), markettrace.KeysOf(m).ItemLock("ItemM", "Bill")).Val(); n != 0 {
			t.Fatalf("%d locks left behind", n)
		}
		audit(t, m)
	})
}

func TestPurchaseRefusals(t *testing.T) {
	forEach(t, func(t *testing.T, b *redistest.Backend, m *market.Market, s market.Strategy) {
		ctx := context.Background()
		user(t, m, "buyer", 10)
		user(t, m, "seller", 0)
		listed(t, m, s, "seller", "cheap", 5)
		listed(t, m, s, "seller", "dear", 50)
		cases := []struct {
			name        string
			buyer, item string
			price       int64
			want        error
		}{
			{"listing gone", "buyer", "nothing", 5, market.ErrListingNotFound},
			{"price changed", "buyer", "cheap", 4, market.ErrPriceChanged},
			{"insufficient funds", "buyer", "dear", 50, market.ErrInsufficientFunds},
			{"unknown buyer", "ghost", "cheap", 5, market.ErrUserNotFound},
		}
		for _, c := range cases {
			if _, err := m.Purchase(ctx, s, c.buyer, "seller", c.item, c.price); !errors.Is(err, c.want) {
				t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
			}
		}
		if _, err := m.List(ctx, s, "seller", "cheap", 7); !errors.Is(err, market.ErrItemNotOwned) {
			t.Errorf("relisting a listed item: %v, want ErrItemNotOwned", err)
		}
		// A refused operation gives its lock back.
		if locks := b.Client.Keys(ctx, m.Keys().Prefix()+"lock:*").Val(); len(locks) != 0 {
			t.Errorf("locks left behind: %v", locks)
		}
		_, total, _ := m.Listings(ctx, 0, 0)
		u, _ := m.GetUser(ctx, "buyer")
		if total != 2 || u.Funds != 10 || len(u.Inventory) != 0 {
			t.Fatalf("a refused operation changed the market: listings=%d buyer=%+v", total, u)
		}
		audit(t, m)
	})
}

func TestListingUnownedItemRefused(t *testing.T) {
	forEach(t, func(t *testing.T, b *redistest.Backend, m *market.Market, s market.Strategy) {
		ctx := context.Background()
		user(t, m, "alice", 0)
		user(t, m, "bob", 0)
		must(t, m.GrantItem(ctx, "bob", "sword"))
		if _, err := m.List(ctx, s, "alice", "sword", 10); !errors.Is(err, market.ErrItemNotOwned) {
			t.Fatalf("err = %v, want ErrItemNotOwned", err)
		}
		if _, total, _ := m.Listings(ctx, 0, 0); total != 0 {
			t.Fatal("unowned item was listed")
		}
		audit(t, m)
	})
}

// countingHook counts the commands sent to Redis.
type countingHook struct{ n atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func TestInvalidInputNeverReachesRedis(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		hook := &countingHook{}
		c := redis.NewClient(&redis.Options{Addr: b.Addr()})
		defer c.Close()
		c.AddHook(hook)
		m, err := newMarket(c, "inv")
		must(t, err)
		long := strings.Repeat("a", 65)
		ids := []string{"", "a.b", "item.", long, "sp ace", "é", "a/b", "{tag}"}
		prices := []int64{0, -1, market.MaxPrice + 1, -market.MaxPrice}
		for _, s := range market.Strategies {
			for _, id := range ids {
				check := func(op string, err error) {
					t.Helper()
					if !errors.Is(err, market.ErrInvalid) {
						t.Errorf("%s %s with %q: err = %v, want ErrInvalid", s, op, id, err)
					}
				}
				_, err := m.List(ctx, s, id, "item", 1)
				check("list seller", err)
				_, err = m.List(ctx, s, "seller", id, 1)
				check("list item", err)
				_, err = m.Purchase(ctx, s, id, "seller", "item", 1)
				check("purchase buyer", err)
				_, err = m.Purchase(ctx, s, "buyer", id, "item", 1)
				check("purchase seller", err)
				_, err = m.Purchase(ctx, s, "buyer", "seller", id, 1)
				check("purchase item", err)
			}
			for _, p := range prices {
				if _, err := m.List(ctx, s, "seller", "item", p); !errors.Is(err, market.ErrInvalid) {
					t.Errorf("%s list at %d: %v", s, p, err)
				}
				if _, err := m.Purchase(ctx, s, "buyer", "seller", "item", p); !errors.Is(err, market.ErrInvalid) {
					t.Errorf("%s purchase at %d: %v", s, p, err)
				}
			}
		}
		for _, f := range []int64{-1, market.MaxFunds + 1} {
			if _, err := m.CreateUser(ctx, "u", "u", f); !errors.Is(err, market.ErrInvalid) {
				t.Errorf("create user with funds %d: %v", f, err)
			}
		}
		if _, err := m.CreateUser(ctx, "u", "", 1); !errors.Is(err, market.ErrInvalid) {
			t.Errorf("create user with empty name: %v", err)
		}
		if _, err := market.New(c, "bad.name"); !errors.Is(err, market.ErrInvalid) {
			t.Errorf("market name with a dot: %v", err)
		}
		if _, err := market.New(c, "m", markettrace.WithClient("python")); !errors.Is(err, market.ErrInvalid) {
			t.Errorf("unknown client form: %v", err)
		}
		if n := hook.n.Load(); n != 0 {
			t.Fatalf("invalid input sent %d commands to Redis", n)
		}
	})
}

func TestUserAndItemUniqueness(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m, _ := newMarket(b.Client, "u")
		user(t, m, "a", 1)
		if _, err := m.CreateUser(ctx, "a", "again", 5); !errors.Is(err, market.ErrAlreadyExists) {
			t.Fatalf("duplicate user: %v", err)
		}
		user(t, m, "b", 1)
		must(t, m.GrantItem(ctx, "a", "x"))
		if err := m.GrantItem(ctx, "b", "x"); !errors.Is(err, market.ErrAlreadyExists) {
			t.Fatalf("duplicate item: %v", err)
		}
		if err := m.GrantItem(ctx, "ghost", "y"); !errors.Is(err, market.ErrUserNotFound) {
			t.Fatalf("grant to unknown user: %v", err)
		}
		if _, err := m.GetUser(ctx, "ghost"); !errors.Is(err, market.ErrUserNotFound) {
			t.Fatalf("get unknown user: %v", err)
		}
		id, err := m.CreateUser(ctx, "", "Random", 3)
		must(t, err)
		if market.ValidID("user", id) != nil {
			t.Fatalf("generated id %q is not valid", id)
		}
		audit(t, m)
	})
}

func TestFiftyRacersOneListing(t *testing.T) {
	forEach(t, func(t *testing.T, b *redistest.Backend, m *market.Market, s market.Strategy) {
		ctx := context.Background()
		user(t, m, "seller", 0)
		listed(t, m, s, "seller", "relic", 10)
		const n = 50
		for i := range n {
			user(t, m, fmt.Sprintf("b%d", i), 100)
		}
		var wins, lost atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, err := m.Purchase(ctx, s, fmt.Sprintf("b%d", i), "seller", "relic", 10)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, market.ErrListingNotFound):
					lost.Add(1)
				default:
					t.Errorf("buyer %d: %v", i, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || lost.Load() != n-1 {
			t.Fatalf("%d purchases succeeded, %d found the listing gone; want 1 and %d", wins.Load(), lost.Load(), n-1)
		}
		seller, _ := m.GetUser(ctx, "seller")
		if seller.Funds != 10 {
			t.Fatalf("seller was paid %d, want 10", seller.Funds)
		}
		audit(t, m)
	})
}

func TestOneBuyerCannotOverdraw(t *testing.T) {
	forEach(t, func(t *testing.T, b *redistest.Backend, m *market.Market, s market.Strategy) {
		ctx := context.Background()
		user(t, m, "s1", 0)
		user(t, m, "s2", 0)
		const rounds = 10
		for r := range rounds {
			buyer := fmt.Sprintf("buyer%d", r)
			user(t, m, buyer, 30) // enough for one of the two
			listed(t, m, s, "s1", fmt.Sprintf("a%d", r), 30)
			listed(t, m, s, "s2", fmt.Sprintf("b%d", r), 30)
			var wins atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for _, sel := range []string{"s1", "s2"} {
				item := map[string]string{"s1": "a", "s2": "b"}[sel] + fmt.Sprint(r)
				wg.Go(func() {
					<-start
					_, err := m.Purchase(ctx, s, buyer, sel, item, 30)
					if err == nil {
						wins.Add(1)
					} else if !errors.Is(err, market.ErrInsufficientFunds) {
						t.Errorf("%s: %v", item, err)
					}
				})
			}
			close(start)
			wg.Wait()
			u, _ := m.GetUser(ctx, buyer)
			if wins.Load() != 1 || u.Funds != 0 || len(u.Inventory) != 1 {
				t.Fatalf("round %d: %d successes, funds %d, inventory %v; want 1, 0, one item", r, wins.Load(), u.Funds, u.Inventory)
			}
		}
		audit(t, m)
	})
}

func TestConcurrentMixedWorkloadAuditsClean(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
	forEach(t, func(t *testing.T, b *redistest.Backend, m *market.Market, s market.Strategy) {
		ctx := context.Background()
		const sellers, buyers, perSeller = 3, 4, 30
		for i := range sellers {
			user(t, m, fmt.Sprintf("s%d", i), 0)
		}
		for i := range buyers {
			user(t, m, fmt.Sprintf("b%d", i), 400) // runs dry partway, on purpose
		}
		var wg sync.WaitGroup
		var done atomic.Int64
		for i := range sellers {
			wg.Go(func() {
				defer done.Add(1)
				seller := fmt.Sprintf("s%d", i)
				for j := range perSeller {
					item := fmt.Sprintf("i%d_%d", i, j)
					if err := m.GrantItem(ctx, seller, item); err != nil {
						t.Error(err)
						return
					}
					if _, err := m.List(ctx, s, seller, item, int64(1+j%20)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		var bought atomic.Int64
		for i := range buyers {
			wg.Go(func() {
				buyer := fmt.Sprintf("b%d", i)
				for k := 0; k < 200 && (done.Load() < sellers || k < 100); k++ {
					ls, _, err := m.Listings(ctx, 0, 5)
					if err != nil {
						t.Error(err)
						return
					}
					if len(ls) == 0 {
						time.Sleep(time.Millisecond)
						continue
					}
					l := ls[k%len(ls)]
					_, err = m.Purchase(ctx, s, buyer, l.Seller, l.Item, l.Price)
					switch {
					case err == nil:
						bought.Add(1)
					case errors.Is(err, market.ErrListingNotFound), errors.Is(err, market.ErrInsufficientFunds),
						errors.Is(err, market.ErrPriceChanged):
					default:
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if bought.Load() == 0 {
			t.Fatal("nothing was bought")
		}
		rep, err := m.Audit(ctx)
		must(t, err)
		if rep.Total() != 0 || rep.Items != sellers*perSeller {
			t.Fatalf("audit: %+v %v (items %d)", rep.Violations, rep.Details, rep.Items)
		}
		if m.Ledger().Sales() != int(bought.Load()) {
			t.Fatalf("ledger has %d sales, buyers saw %d", m.Ledger().Sales(), bought.Load())
		}
	})
}

// TestWatchRetriesRiseWithConcurrentListings is the book's lesson of
// section 6.2: a buyer's WATCH on the whole market is aborted by every
// listing that lands between its WATCH and its EXEC.
func TestWatchRetriesRiseWithConcurrentListings(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
	for _, f := range markettrace.ClientForms {
		t.Run(string(f), func(t *testing.T) { watchRetriesRise(t, f) })
	}
}

func watchRetriesRise(t *testing.T, f markettrace.ClientForm) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		retries := func(listers int) int {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m, _ := newMarket(b.Client, fmt.Sprintf("w%d", listers), markettrace.WithClient(f))
			user(t, m, "buyer", market.MaxFunds)
			user(t, m, "stock", 0)
			const items = 60
			for i := range items {
				listed(t, m, market.Watch, "stock", fmt.Sprintf("s%d", i), 1)
			}
			var wg sync.WaitGroup
			for l := range listers {
				seller := fmt.Sprintf("l%d", l)
				user(t, m, seller, 0)
				wg.Go(func() {
					for j := 0; ctx.Err() == nil; j++ {
						item := fmt.Sprintf("%s_%d", seller, j)
						if m.GrantItem(ctx, seller, item) != nil {
							return
						}
						m.List(ctx, market.Watch, seller, item, 1000)
					}
				})
			}
			total := 0
			for i := range items {
				cost, err := m.Purchase(context.Background(), market.Watch, "buyer", "stock", fmt.Sprintf("s%d", i), 1)
				if err != nil {
					t.Fatal(err)
				}
				total += cost.Retries
			}
			cancel()
			wg.Wait()
			audit(t, m)
			return total
		}
		alone, crowded := retries(0), retries(4)
		t.Logf("retries for 60 purchases: %d alone, %d with 4 listers", alone, crowded)
		if alone != 0 || crowded <= alone {
			t.Fatalf("retries alone=%d, with listers=%d; want 0 and more", alone, crowded)
		}
	})
}
