package httpapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// waitState waits until the gate shows the wanted numbers of operations
// running and waiting (the goroutines under test get there on their own).
func waitState(t *testing.T, g *Gate, cur string, active, waiting int) {
	t.Helper()
	redistest.WaitFor(t, fmt.Sprintf("the gate with %q running %d and %d waiting", cur, active, waiting), func() bool {
		c, a, w := g.state()
		return c == cur && a == active && w == waiting
	})
}

// TestGateTurns checks the turn-taking: same-key operations share the
// gate, another key waits for them to drain, an arrival whose key is
// running queues behind a waiting key instead of overtaking it, and
// consecutive arrivals of one key wait as one turn.
func TestGateTurns(t *testing.T) {
	var g Gate
	ctx := context.Background()
	w1, err := g.Enter(ctx, "watch")
	if err != nil {
		t.Fatal(err)
	}
	w2, err := g.Enter(ctx, "watch") // same key, nobody waiting: joins at once
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, &g, "watch", 2, 0)

	type op struct {
		key     string
		in      chan struct{} // closed when admitted
		release chan struct{} // closed by the test to leave
	}
	var wg sync.WaitGroup
	start := func(key string) *op {
		o := &op{key: key, in: make(chan struct{}), release: make(chan struct{})}
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := g.Enter(ctx, key)
			if err != nil {
				t.Error(err)
				return
			}
			close(o.in)
			<-o.release
			release()
		}()
		return o
	}
	admitted := func(o *op) bool {
		select {
		case <-o.in:
			return true
		default:
			return false
		}
	}
	lua1 := start("lua")
	waitState(t, &g, "watch", 2, 1)
	lua2 := start("lua") // joins lua1's turn
	waitState(t, &g, "watch", 2, 2)
	watch3 := start("watch") // must not overtake the lua turn
	waitState(t, &g, "watch", 2, 3)
	fine4 := start("fine")
	waitState(t, &g, "watch", 2, 4)

	w1()
	w1() // a second release is a no-op
	waitState(t, &g, "watch", 1, 4)
	if admitted(lua1) || admitted(lua2) || admitted(watch3) {
		t.Fatal("admitted while watch runs")
	}
	w2()
	<-lua1.in
	<-lua2.in
	waitState(t, &g, "lua", 2, 2)
	close(lua1.release)
	waitState(t, &g, "lua", 1, 2)
	if admitted(watch3) || admitted(fine4) {
		t.Fatal("admitted while lua runs")
	}
	close(lua2.release)
	<-watch3.in
	waitState(t, &g, "watch", 1, 1)
	if admitted(fine4) {
		t.Fatal("fine admitted while watch runs")
	}
	close(watch3.release)
	<-fine4.in
	close(fine4.release)
	wg.Wait()
	waitState(t, &g, "fine", 0, 0)
}

// TestGateCancel checks that a waiter whose context ends leaves the queue
// and that the turns behind it still come.
func TestGateCancel(t *testing.T) {
	var g Gate
	hold, err := g.Enter(context.Background(), "coarse")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gave := make(chan error, 1)
	go func() {
		_, err := g.Enter(ctx, "fine")
		gave <- err
	}()
	waitState(t, &g, "coarse", 1, 1)
	got := make(chan struct{})
	go func() {
		release, err := g.Enter(context.Background(), "lua")
		if err != nil {
			t.Error(err)
		}
		close(got)
		release()
	}()
	waitState(t, &g, "coarse", 1, 2)
	cancel()
	if err := <-gave; !errors.Is(err, context.Canceled) {
		t.Fatalf("Enter: %v, want context.Canceled", err)
	}
	waitState(t, &g, "coarse", 1, 1)
	hold()
	<-got
	waitState(t, &g, "lua", 0, 0)
}

// TestGateExclusion runs many goroutines with random keys and checks that
// operations of two keys are never in the gate at the same time.
func TestGateExclusion(t *testing.T) {
	var g Gate
	keys := []string{"watch", "coarse", "fine", "lua"}
	var inside [4]atomic.Int32
	var overlaps, entries atomic.Int32
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := (w + i*7) % len(keys)
				release, err := g.Enter(context.Background(), keys[k])
				if err != nil {
					t.Error(err)
					return
				}
				inside[k].Add(1)
				entries.Add(1)
				for o := range keys {
					if o != k && inside[o].Load() != 0 {
						overlaps.Add(1)
					}
				}
				if i%10 == 0 {
					time.Sleep(10 * time.Microsecond)
				}
				inside[k].Add(-1)
				release()
			}
		}()
	}
	wg.Wait()
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d times two strategies were inside at once", n)
	}
	if n := entries.Load(); n != 16*200 {
		t.Fatalf("%d entries, want %d", n, 16*200)
	}
	cur, _, _ := g.state()
	waitState(t, &g, cur, 0, 0)
}
