package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/explore/exploretest"
)

// target runs the lock under the explorer, as an application would use
// it: each client takes the lock (tries times, wait apart), reads a
// shared counter and writes it back plus one while counting its section
// (in one transaction), and unlocks. Check finds a lost update: fewer increments on the counter
// than sections that wrote.
func target(name string, tries int, wait time.Duration) *explore.Target {
	return &explore.Target{
		Name:    name,
		Clients: 2,
		Client: func(ctx context.Context, c *explore.Client) error {
			h, err := New(c.Redis(), tries, wait).Lock(c.Key("lock:job"), c.Lease())
			if errors.Is(err, ErrNotObtained) {
				return nil
			}
			if err != nil {
				return err
			}
			c.Holding(c.Lease())
			rdb := c.Redis()
			n, err := rdb.Get(ctx, c.Key("counter")).Int()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			// The write and its count, in one transaction.
			if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, c.Key("counter"), n+1, 0)
				p.Incr(ctx, c.Key("sections"))
				return nil
			}); err != nil {
				return err
			}
			c.Released()
			if err := h.Unlock(); err != nil && !errors.Is(err, ErrNotHeld) {
				return err
			}
			return nil
		},
		Check: func(ctx context.Context, rdb *redis.Client, ns explore.Namespace) error {
			counter, err := rdb.Get(ctx, ns.Key("counter")).Int()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			sections, err := rdb.Get(ctx, ns.Key("sections")).Int()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			if counter != sections {
				return fmt.Errorf("lost update: %d sections wrote, the counter says %d", sections, counter)
			}
			return nil
		},
	}
}

// TestLostUpdate checks that the explorer holds the commands the lock
// sends with context.Background() like any other, and finds the lost
// update of its unfenced lease: a holder paused past its lease (the one
// fault injected) writes after another client took the lock and wrote.
func TestLostUpdate(t *testing.T) {
	rdb := exploretest.Redis(t)
	tg := target("lock without context, one try", 1, 0)
	o := explore.Options{
		FaultKinds: []explore.Fault{explore.PauseLong},
		Stop:       []explore.Property{explore.Resource},
	}
	res, err := explore.Check(context.Background(), rdb, tg, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Counterexamples) == 0 || res.Counterexamples[0].Property != explore.Resource {
		t.Fatalf("%d schedules, found %v; want the lost update (resource)", res.Schedules, res.Counterexamples)
	}
	f := res.Counterexamples[0]
	if !f.Reproduced {
		t.Errorf("the lost update was not reproduced on a fresh server: %s", f.ReplayNote)
	}
	t.Logf("found after %d schedules: %s\n%s", res.Schedules, f.Message, f)
}

// TestWallClockWait checks that a lock that sleeps on the wall clock
// between tries (time.Sleep, which the explorer's clock cannot move)
// ends the search with an error that names the client, the wait and
// what to do instead, within 30 s rather than after minutes.
func TestWallClockWait(t *testing.T) {
	rdb := exploretest.Redis(t)
	tg := target("lock without context, 40 tries 50 ms apart", 40, 50*time.Millisecond)
	start := time.Now()
	_, err := explore.Check(context.Background(), rdb, tg, explore.Options{})
	took := time.Since(start)
	if !errors.Is(err, explore.ErrWallClock) {
		t.Fatalf("err = %v, want ErrWallClock", err)
	}
	for _, want := range []string{"client ", "time.Sleep", "Locker).Lock", "Client.Sleep"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	// A bound the explorer promises, with a wide margin: it reports the
	// wait after about a second of it.
	if took > 30*time.Second {
		t.Errorf("the search took %v to report the wait, want under 30 s", took)
	}
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
}
