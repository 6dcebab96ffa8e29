package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// rushFixture is a running server with buyers b0..b9 (funds 10000 each),
// a seller with the given items listed at 100.
func rushFixture(t *testing.T, b *redistest.Backend, items int) (*fixture, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	f := newFixture(t, b)
	for i := range 10 {
		if _, err := f.m.CreateUser(ctx, fmt.Sprintf("b%d", i), "Buyer", 10000); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.m.CreateUser(ctx, "seller", "Seller", 0); err != nil {
		t.Fatal(err)
	}
	for j := range items {
		item := fmt.Sprintf("item%d", j)
		if err := f.m.GrantItem(ctx, "seller", item); err != nil {
			t.Fatal(err)
		}
		if _, err := f.m.List(ctx, market.Lua, "seller", item, 100); err != nil {
			t.Fatal(err)
		}
	}
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	return f, ts
}

// rush fires n concurrent purchases at the listings; strategy(i) gives the
// strategy of purchase i. It returns the number of 200s per item and the
// error codes of the rest.
func rush(t *testing.T, ts *httptest.Server, n, items int, strategy func(i int) market.Strategy) (map[string]int, map[string]int) {
	t.Helper()
	var mu sync.Mutex
	ok, failed := map[string]int{}, map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			item := fmt.Sprintf("item%d", i%items)
			body := fmt.Sprintf(`{"buyer":"b%d","seller":"seller","item":%q,"price":100}`, i%10, item)
			<-start
			r := send(t, ts.Client(), "POST", ts.URL+"/api/purchases?strategy="+string(strategy(i)), body)
			mu.Lock()
			defer mu.Unlock()
			if r.status == http.StatusOK {
				ok[item]++
			} else {
				failed[fmt.Sprintf("%d %s", r.status, r.code())]++
			}
		}()
	}
	close(start)
	wg.Wait()
	return ok, failed
}

// TestConcurrentPurchases sends 50 concurrent purchases of one listing
// through HTTP under each strategy: exactly one succeeds, the other 49 find
// the listing gone, and the audit is clean.
func TestConcurrentPurchases(t *testing.T) {
	t.Parallel() // servers of its own
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		for _, st := range market.Strategies {
			t.Run(string(st), func(t *testing.T) {
				f, ts := rushFixture(t, b, 1)
				ok, failed := rush(t, ts, 50, 1, func(int) market.Strategy { return st })
				if ok["item0"] != 1 || failed["404 listing_not_found"] != 49 {
					t.Fatalf("ok %v, failed %v; want one success and 49 listing_not_found", ok, failed)
				}
				audit(t, f.m)
			})
		}
	})
}

// TestMixedStrategies sends concurrent purchases whose requests name
// different strategies at the same listings: the gate keeps the
// strategies apart, so each listing is sold once and the audit is clean.
func TestMixedStrategies(t *testing.T) {
	t.Parallel() // servers of its own
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		const items, n = 4, 80
		f, ts := rushFixture(t, b, items)
		ok, failed := rush(t, ts, n, items, func(i int) market.Strategy {
			return market.Strategies[(i/items)%len(market.Strategies)]
		})
		for j := range items {
			if got := ok[fmt.Sprintf("item%d", j)]; got != 1 {
				t.Errorf("item%d sold %d times", j, got)
			}
		}
		if failed["404 listing_not_found"] != n-items {
			t.Errorf("failed %v; want %d listing_not_found", failed, n-items)
		}
		audit(t, f.m)
		if r := send(t, ts.Client(), "GET", ts.URL+"/api/audit", ""); r.status != http.StatusOK || r.code() != "" {
			t.Errorf("audit: %d %s", r.status, r.body)
		}
	})
}

// TestRedisDown stops Redis under a running service: the API and /healthz
// answer 503 redis_unavailable, and after a restart the service works
// again without being restarted itself.
func TestRedisDown(t *testing.T) {
	ctx := context.Background()
	redistest.RequireServer(t)
	srv, err := redisserver.Start(ctx, redisserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{
		Addr: srv.Addr(), DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
		MaxRetries: 1, PoolTimeout: time.Second, DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond,
	})
	t.Cleanup(func() { rdb.Close() })
	m, err := market.New(rdb, "t", market.WithLedger(market.NewLedger()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Market: m})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	if r := serve(h, "POST", "/api/users", `{"id":"alice","name":"Alice","funds":10}`); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}

	srv.Kill()
	down := []struct{ method, path, body string }{
		{"GET", "/healthz", ""},
		{"POST", "/api/users", `{"id":"bob","name":"Bob","funds":10}`},
		{"GET", "/api/users/alice", ""},
		{"GET", "/api/users", ""},
		{"POST", "/api/users/alice/inventory", `{"item":"sword"}`},
		{"GET", "/api/market", ""},
		{"GET", "/api/audit", ""},
	}
	for _, st := range market.Strategies {
		down = append(down,
			struct{ method, path, body string }{"POST", "/api/listings?strategy=" + string(st), `{"seller":"alice","item":"sword","price":5}`},
			struct{ method, path, body string }{"POST", "/api/purchases?strategy=" + string(st), `{"buyer":"alice","seller":"bob","item":"sword","price":5}`})
	}
	for _, d := range down {
		t.Run("down "+d.method+" "+d.path, func(t *testing.T) {
			r := serve(h, d.method, d.path, d.body)
			if r.status != http.StatusServiceUnavailable || r.code() != CodeRedisUnavailable {
				t.Fatalf("%d %s; want 503 %s", r.status, r.body, CodeRedisUnavailable)
			}
			if r.header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
		})
	}
	// Bad input is still refused as such, without Redis.
	if r := serve(h, "POST", "/api/users", `{"name":1}`); r.status != http.StatusBadRequest {
		t.Errorf("bad input while down: %d %s", r.status, r.body)
	}

	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	// The pool may still hold connections to the old process; the client
	// drops them as they fail, so the service comes back by itself.
	redistest.WaitFor(t, "the service to recover after Redis restarted", func() bool {
		return serve(h, "GET", "/healthz", "").status == http.StatusOK
	})
	// The restarted server is empty: create a market again through the API.
	steps := []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/api/users", `{"id":"bob","name":"Bob","funds":10}`, 201},
		{"POST", "/api/users", `{"id":"carol","name":"Carol","funds":10}`, 201},
		{"POST", "/api/users/bob/inventory", `{"item":"sword"}`, 201},
		{"POST", "/api/listings", `{"seller":"bob","item":"sword","price":5}`, 201},
		{"POST", "/api/purchases", `{"buyer":"carol","seller":"bob","item":"sword","price":5}`, 200},
		{"GET", "/api/users/carol", "", 200},
	}
	for _, st := range steps {
		if r := serve(h, st.method, st.path, st.body); r.status != st.status {
			t.Fatalf("after restart %s %s: %d %s, want %d", st.method, st.path, r.status, r.body, st.status)
		}
	}
	metrics := string(serve(h, "GET", "/metrics", "").body)
	for _, want := range []string{
		`lockmarket_purchases_total{outcome="redis_unavailable",strategy="lua"} 1`,
		`lockmarket_purchases_total{outcome="ok",strategy="fine"} 1`,
	} {
		if !containsLine(metrics, want) {
			t.Errorf("no %q in metrics", want)
		}
	}
}
