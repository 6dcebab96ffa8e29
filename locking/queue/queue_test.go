package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/locking/queue"
)

// waitQueued waits until m's queue holds n tokens.
func waitQueued(ctx context.Context, t *testing.T, m *queue.Mutex, n int64) {
	t.Helper()
	for {
		got, err := m.Queued(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("queue of %s holds %d tokens; want %d", m.Key(), got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// startWaiter runs m.Acquire in a goroutine; the function it returns waits
// for that acquisition's outcome.
func startWaiter(ctx context.Context, m *queue.Mutex) func() (*queue.Lock, error) {
	type result struct {
		l   *queue.Lock
		err error
	}
	c := make(chan result, 1)
	go func() {
		l, err := m.Acquire(ctx)
		c <- result{l, err}
	}()
	return func() (*queue.Lock, error) {
		r := <-c
		return r.l, r.err
	}
}

// acquired waits for a waiter's hold, failing the test if it got none.
func acquired(t *testing.T, wait func() (*queue.Lock, error)) *queue.Lock {
	t.Helper()
	l, err := wait()
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	return l
}

// testContext is the bound of one test's waits.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// noKeysLeft fails the test if any key of the lock on key remains.
func noKeysLeft(ctx context.Context, t *testing.T, rdb redis.UniversalClient, key string) {
	t.Helper()
	keys, err := rdb.Keys(ctx, "*"+key+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("keys left (a stuck grant or queue entry) after every hold was released: %v", keys)
	}
}

func TestNeverTwoHolders(t *testing.T) {
	for _, tc := range []struct {
		name       string
		goroutines int
		rounds     int
	}{
		{"2 goroutines", 2, 40},
		{"10 goroutines", 10, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := testContext(t)
				m := queue.NewMutex(b.Client, "lock:q", 10*time.Second)
				var inside atomic.Int64
				var overlap atomic.Bool
				var wg sync.WaitGroup
				for range tc.goroutines {
					wg.Go(func() {
						for range tc.rounds {
							l, err := m.Acquire(ctx)
							if err != nil {
								t.Error(err)
								return
							}
							if inside.Add(1) > 1 {
								overlap.Store(true)
							}
							// A read-modify-write that loses updates
							// unless holders are exclusive.
							n, err := b.Client.Get(ctx, "counter").Int()
							if err != nil && !errors.Is(err, redis.Nil) {
								t.Error(err)
							}
							if err := b.Client.Set(ctx, "counter", n+1, 0).Err(); err != nil {
								t.Error(err)
							}
							inside.Add(-1)
							if err := l.Release(ctx); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				got, err := b.Client.Get(ctx, "counter").Int()
				if err != nil {
					t.Fatal(err)
				}
				if want := tc.goroutines * tc.rounds; overlap.Load() || got != want {
					t.Fatalf("overlap %v, counter %d; want false, %d", overlap.Load(), got, want)
				}
				noKeysLeft(ctx, t, b.Client, "lock:q")
			})
		})
	}
}

func TestIsFIFO(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := testContext(t)
		const waiters = 6
		m := queue.NewMutex(b.Client, "lock:fifo", time.Minute)
		holder, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := range waiters {
			wg.Go(func() {
				l, err := m.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			})
			waitQueued(ctx, t, m, int64(i+1))
		}
		// A newcomer must not jump the queue, even with the lock free
		// for an instant during a release.
		if _, err := m.TryAcquire(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("TryAcquire while held: %v; want ErrNotAcquired", err)
		}
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if fmt.Sprint(order) != "[0 1 2 3 4 5]" {
			t.Fatalf("waiters held the lock in order %v; want queue order", order)
		}
	})
}

func TestWaiterThatGivesUpPassesTheLockOn(t *testing.T) {
	tests := []struct {
		name string
		// giveUp makes the first waiter give up, before or after the
		// holder's release; it returns the first waiter's token when the
		// test must release the holder and make that waiter leave.
		giveUp func(ctx context.Context, t *testing.T, m *queue.Mutex, holder *queue.Lock) string
	}{
		{
			// The first waiter's deadline passes while the lock is held:
			// it leaves the queue, and the release skips it.
			name: "deadline before the grant",
			giveUp: func(ctx context.Context, t *testing.T, m *queue.Mutex, holder *queue.Lock) string {
				wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				if _, err := m.Acquire(wctx); !errors.Is(err, locking.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Acquire past its deadline: %v; want ErrNotAcquired and DeadlineExceeded", err)
				}
				if err := holder.Release(ctx); err != nil {
					t.Fatal(err)
				}
				return ""
			},
		},
		{
			// The first waiter is granted the lock and gives up before
			// taking the grant: its leave script hands the lock on.
			name: "granted, then gives up",
			giveUp: func(ctx context.Context, t *testing.T, m *queue.Mutex, holder *queue.Lock) string {
				const token = "gives-up"
				if err := m.Enqueue(ctx, token); err != nil {
					t.Fatal(err)
				}
				return token
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := testContext(t)
				const key = "lock:leave"
				m := queue.NewMutex(b.Client, key, time.Minute)
				holder, err := m.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				first := tc.giveUp(ctx, t, m, holder)
				second := startWaiter(ctx, m)
				if first != "" {
					waitQueued(ctx, t, m, 2)
					if err := holder.Release(ctx); err != nil {
						t.Fatal(err)
					}
					if v, err := b.Client.Get(ctx, key).Result(); err != nil || v != first {
						t.Fatalf("after the release the lock holds %q (%v); want the first waiter %q", v, err, first)
					}
					m.Leave(ctx, first)
				}
				if err := acquired(t, second).Release(ctx); err != nil {
					t.Fatalf("second waiter's release: %v", err)
				}
				noKeysLeft(ctx, t, b.Client, key)
			})
		})
	}
}

func TestDeadHolderLeaseExpires(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := testContext(t)
		const key = "lock:dead"
		m := queue.NewMutex(b.Client, key, time.Minute, queue.WithPoll(20*time.Millisecond))
		if _, err := m.Acquire(ctx); err != nil { // never released: the holder died
			t.Fatal(err)
		}
		waiter := startWaiter(ctx, m)
		waitQueued(ctx, t, m, 1)
		b.Expire(t, key) // the dead holder's lease runs out
		if err := acquired(t, waiter).Release(ctx); err != nil {
			t.Fatalf("release by the waiter behind a dead holder: %v", err)
		}
	})
}

func TestDeadWaiterIsSkipped(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := testContext(t)
		const key, ttl = "lock:skip", time.Minute
		m := queue.NewMutex(b.Client, key, ttl)
		holder, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Enqueue(ctx, "dead"); err != nil {
			t.Fatal(err)
		}
		// It stopped polling and its liveness key ran out. (Deleted rather
		// than expired: on miniredis, moving the clock would also expire
		// the queue, which shares the key's expiry.)
		if err := b.Client.Del(ctx, queue.AliveKey(key, "dead")).Err(); err != nil {
			t.Fatal(err)
		}
		queued := time.Now()
		waiter := startWaiter(ctx, m)
		waitQueued(ctx, t, m, 2)
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		released := time.Now()
		l := acquired(t, waiter)
		if v, err := b.Client.Get(ctx, key).Result(); err != nil || v != l.Token() {
			t.Fatalf("lock holds %q (%v); want the live waiter's token", v, err)
		}
		// The lease was granted after the waiter queued and before the
		// release returned, so its conservative end lies a lease after
		// some instant between the two.
		if e := l.Expires(); e.Before(queued.Add(ttl)) || e.After(released.Add(ttl)) {
			t.Fatalf("handed-over lease ends at %v; want within [%v, %v]", e, queued.Add(ttl), released.Add(ttl))
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReleaseByToken(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := testContext(t)
		const key = "lock:token"
		m := queue.NewMutex(b.Client, key, time.Minute)
		holder, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		waiter := startWaiter(ctx, m)
		waitQueued(ctx, t, m, 1)
		for _, tc := range []struct {
			name  string
			token string
			want  error
		}{
			{"someone else's token", "not-a-holder", locking.ErrNotHeld},
			{"the holder's token hands over", holder.Token(), nil},
			{"the same token again", holder.Token(), locking.ErrNotHeld},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if err := m.ReleaseToken(ctx, tc.token); !errors.Is(err, tc.want) {
					t.Fatalf("ReleaseToken: %v; want %v", err, tc.want)
				}
			})
		}
		if err := acquired(t, waiter).Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := b.Client.Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Fatalf("lock key exists %d (%v) after the last release; want 0", n, err)
		}
	})
}

// TestOnRedisCluster hands the lock over on a three-master Redis Cluster
// with a key that carries no hash tag: the queue, liveness and grant keys
// the scripts touch must all land in the lock key's slot.
func TestOnRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	rdb, _ := redistest.Cluster(t, 3)
	ctx := testContext(t)
	m := queue.NewMutex(rdb, "inventory", time.Minute)
	holder, err := m.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiter := startWaiter(ctx, m)
	waitQueued(ctx, t, m, 1)
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := acquired(t, waiter).Release(ctx); err != nil {
		t.Fatalf("release by the waiter on the cluster: %v", err)
	}
}

// TestExtend renews a hold as locking.KeepAlive does: only while the lock
// is still the hold's.
func TestExtend(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := testContext(t)
		const key = "lock:kept"
		m := queue.NewMutex(b.Client, key, time.Minute)
		l, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var _ locking.Extender = l
		if err := l.Extend(ctx, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		if ttl := b.Client.PTTL(ctx, key).Val(); ttl <= time.Minute {
			t.Fatalf("pttl after extend = %v; want above the first lease", ttl)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Extend(ctx, time.Minute); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("extend after release: %v; want ErrNotHeld", err)
		}
	})
}
