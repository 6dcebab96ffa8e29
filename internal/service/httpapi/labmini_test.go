package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// TestLabLeavesServedMarket runs every lab recipe on a service whose
// Redis is the embedded miniredis while a load of listings and purchases
// runs on the served market: the served market's audit stays clean and its
// keys' TTLs (an idempotency record's, a lock's lease) are what they were.
// A recipe makes a lease run out by moving its server's clock; on the
// served server that aged every key of the served market with it.
func TestLabLeavesServedMarket(t *testing.T) {
	t.Parallel() // a service of its own; its recipes mostly wait
	b := redistest.Mini(t)
	srv, f := newJobsServer(t, b)
	ctx := context.Background()
	k := markettrace.KeysOf(f.m)
	if _, err := f.m.Purchase(ctx, market.Fine, "carol", "alice", "sword", 50, market.OpID("kept")); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Client.Set(ctx, k.ItemLock("x", "y"), "held", 10*time.Second).Err())
	ttls := map[string]int64{}
	for _, key := range []string{k.Op("kept"), k.ItemLock("x", "y")} {
		ttls[key] = int64(b.Mini.TTL(key))
		if ttls[key] <= 0 {
			t.Fatalf("%s has no TTL", key)
		}
	}

	// The load: two users buying from each other, under fine.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, u := range []string{"dan", "eve"} {
		if _, err := f.m.CreateUser(ctx, u, u, 1_000_000); err != nil {
			t.Fatal(err)
		}
	}
	var loadErr error
	wg.Go(func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			seller, buyer := "dan", "eve"
			if n%2 == 1 {
				seller, buyer = buyer, seller
			}
			item := fmt.Sprintf("load%d", n)
			if err := f.m.GrantItem(ctx, seller, item); err != nil {
				loadErr = err
				return
			}
			if _, err := f.m.List(ctx, market.Fine, seller, item, 5); err != nil {
				loadErr = err
				return
			}
			if _, err := f.m.Purchase(ctx, market.Fine, buyer, seller, item, 5); err != nil {
				loadErr = err
				return
			}
		}
	})
	for _, sc := range gallery.Scenarios() {
		n := sc.Recipe.ID
		r := serve(srv.Handler(), "POST", "/api/lab/runs", `{"recipe":"`+n+`"}`)
		if r.status != http.StatusAccepted {
			t.Fatalf("recipe %s: %d %s", n, r.status, r.body)
		}
		var run api.LabRun
		r.decode(t, &run)
		waitForJob(t, srv.Handler(), "/api/lab/runs/"+run.ID, &run)
		if run.State != api.StateDone {
			t.Fatalf("recipe %s: %s %s", n, run.State, run.Error)
		}
	}
	close(stop)
	wg.Wait()
	if loadErr != nil {
		t.Fatalf("load: %v", loadErr)
	}
	for key, ttl := range ttls {
		if got := int64(b.Mini.TTL(key)); got != ttl {
			t.Errorf("%s: TTL %v after the lab runs, %v before", key, got, ttl)
		}
	}
	audit(t, f.m)
}
