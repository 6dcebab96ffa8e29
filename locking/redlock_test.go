package locking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

// cluster is five independent servers and a way to take one down. Its
// clients dial a server once (go-redis retries a refused dial four times,
// 100 ms apart): a server taken down answers at once.
type cluster struct {
	clients []redis.UniversalClient
	down    func(i int)
}

func miniCluster(t *testing.T) cluster {
	var c cluster
	var minis []*miniredis.Miniredis
	for range 5 {
		m := miniredis.RunT(t)
		minis = append(minis, m)
		cl := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { cl.Close() })
		c.clients = append(c.clients, cl)
	}
	c.down = func(i int) { minis[i].Close() }
	return c
}

func realCluster(t *testing.T) cluster {
	var c cluster
	var servers []*redisserver.Server
	for range 5 {
		s := redistest.Real(t).Server
		servers = append(servers, s)
		cl := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { cl.Close() })
		c.clients = append(c.clients, cl)
	}
	c.down = func(i int) { servers[i].Kill() }
	return c
}

func runRedlock(t *testing.T, fn func(t *testing.T, c cluster)) {
	t.Run("miniredis", func(t *testing.T) { fn(t, miniCluster(t)) })
	t.Run("redis-server", func(t *testing.T) { fn(t, realCluster(t)) })
}

func holders(c cluster, key, token string) int {
	n := 0
	for _, cl := range c.clients {
		if v, err := cl.Get(context.Background(), key).Result(); err == nil && v == token {
			n++
		}
	}
	return n
}

func TestRedlockMajority(t *testing.T) {
	runRedlock(t, func(t *testing.T, c cluster) {
		ctx := context.Background()
		rl := locking.NewRedlockMutex(c.clients, "res", 10*time.Second, locking.WithNodeTimeout(time.Second))
		if rl.Quorum() != 3 {
			t.Fatalf("quorum %d", rl.Quorum())
		}
		before := time.Now()
		h, err := rl.TryAcquire(ctx)
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if n := holders(c, "res", h.Token()); n != 5 {
			t.Fatalf("held on %d servers, want 5", n)
		}
		// The validity is counted from the start of the attempt: the lease
		// less the drift allowance, from an instant within the call.
		valid := 10*time.Second - rl.Drift(10*time.Second)
		if e := h.Expires(); e.Before(before.Add(valid)) || e.After(after.Add(valid)) {
			t.Fatalf("valid until %v; want within [%v, %v]", e, before.Add(valid), after.Add(valid))
		}
		// Validity is what is left of that, as of the call.
		early := time.Until(h.Expires())
		v := h.Validity()
		late := time.Until(h.Expires())
		if v > early || v < late {
			t.Fatalf("validity %v; want within [%v, %v]", v, late, early)
		}
		if _, err := rl.TryAcquire(ctx); !errors.Is(err, locking.ErrTaken) || !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("second holder: %v, want ErrTaken", err)
		}
		if err := h.Extend(ctx, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n := holders(c, "res", h.Token()); n != 0 {
			t.Fatalf("token left on %d servers after release", n)
		}
		if err := h.Extend(ctx, time.Second); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("extend after release: %v", err)
		}
	})
}

func TestRedlockMinorityHeldElsewhere(t *testing.T) {
	for _, tc := range []struct {
		name  string
		taken int // servers on which someone else holds the key
		want  error
	}{{"two taken", 2, nil}, {"three taken", 3, locking.ErrTaken}} {
		t.Run(tc.name, func(t *testing.T) {
			runRedlock(t, func(t *testing.T, c cluster) {
				ctx := context.Background()
				for i := range tc.taken {
					c.clients[i].Set(ctx, "res", "other", time.Minute)
				}
				rl := locking.NewRedlockMutex(c.clients, "res", 10*time.Second, locking.WithNodeTimeout(time.Second))
				h, err := rl.TryAcquire(ctx)
				if !errors.Is(err, tc.want) {
					t.Fatalf("err %v, want %v", err, tc.want)
				}
				if err != nil {
					// A failed attempt leaves nothing behind.
					for i, cl := range c.clients {
						if v := cl.Get(ctx, "res").Val(); v != "" && v != "other" {
							t.Fatalf("server %d keeps %q after a failed attempt", i, v)
						}
					}
					return
				}
				if n := holders(c, "res", h.Token()); n != 5-tc.taken {
					t.Fatalf("held on %d servers", n)
				}
				h.Release(ctx)
			})
		})
	}
}

func TestRedlockServersDown(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
	for _, tc := range []struct {
		name string
		down int
		want error
	}{{"two down", 2, nil}, {"three down", 3, locking.ErrQuorumUnreachable}} {
		t.Run(tc.name, func(t *testing.T) {
			runRedlock(t, func(t *testing.T, c cluster) {
				ctx := context.Background()
				for i := range tc.down {
					c.down(i)
				}
				rl := locking.NewRedlockMutex(c.clients, "res", 10*time.Second, locking.WithNodeTimeout(time.Second))
				h, err := rl.TryAcquire(ctx)
				if !errors.Is(err, tc.want) {
					t.Fatalf("err %v, want %v", err, tc.want)
				}
				if err == nil {
					if err := h.Extend(ctx, 10*time.Second); err != nil {
						t.Fatalf("extend on the surviving majority: %v", err)
					}
					if err := h.Release(ctx); err != nil {
						t.Fatal(err)
					}
				}
			})
		})
	}
}

func TestRedlockQuorumLostWhileHeld(t *testing.T) {
	runRedlock(t, func(t *testing.T, c cluster) {
		ctx := context.Background()
		rl := locking.NewRedlockMutex(c.clients, "res", 10*time.Second, locking.WithNodeTimeout(time.Second))
		h, err := rl.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			c.down(i)
		}
		if err := h.Extend(ctx, 10*time.Second); !errors.Is(err, locking.ErrQuorumUnreachable) {
			t.Fatalf("extend without quorum: %v", err)
		}
	})
}
