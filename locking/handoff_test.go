package locking_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

// waitQueued waits until key's queue holds n tokens.
func waitQueued(ctx context.Context, t *testing.T, rdb redis.UniversalClient, key string, n int64) {
	t.Helper()
	for {
		got, err := rdb.LLen(ctx, locking.QueueKey(key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got == n {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("queue of %s holds %d tokens; want %d", key, got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestQueueMutexNeverTwoHolders(t *testing.T) {
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
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				m := locking.NewQueueMutex(b.Client, "lock:q", 10*time.Second)
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
				keys, err := b.Client.Keys(ctx, "*lock:q*").Result()
				if err != nil {
					t.Fatal(err)
				}
				if len(keys) != 0 {
					t.Fatalf("keys left after every hold was released: %v", keys)
				}
			})
		})
	}
}

func TestQueueMutexIsFIFO(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const key, waiters = "lock:fifo", 6
		m := locking.NewQueueMutex(b.Client, key, time.Minute)
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
			waitQueued(ctx, t, b.Client, key, int64(i+1))
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

func TestQueueMutexWaiterThatGivesUpPassesTheLockOn(t *testing.T) {
	tests := []struct {
		name string
		// leave makes the first waiter give up after the holder queued
		// the second one behind it; it returns the first waiter's token.
		giveUp func(ctx context.Context, t *testing.T, m *locking.QueueMutex, holder *locking.QueueLock) string
	}{
		{
			// The first waiter's deadline passes while the lock is held:
			// it leaves the queue, and the release skips it.
			name: "deadline before the grant",
			giveUp: func(ctx context.Context, t *testing.T, m *locking.QueueMutex, holder *locking.QueueLock) string {
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
			giveUp: func(ctx context.Context, t *testing.T, m *locking.QueueMutex, holder *locking.QueueLock) string {
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
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				const key = "lock:leave"
				m := locking.NewQueueMutex(b.Client, key, time.Minute)
				holder, err := m.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				first := tc.giveUp(ctx, t, m, holder)
				got := make(chan error, 1)
				go func() {
					l, err := m.Acquire(ctx)
					if err == nil {
						err = l.Release(ctx)
					}
					got <- err
				}()
				if first != "" {
					waitQueued(ctx, t, b.Client, key, 2)
					if err := holder.Release(ctx); err != nil {
						t.Fatal(err)
					}
					if v, err := b.Client.Get(ctx, key).Result(); err != nil || v != first {
						t.Fatalf("after the release the lock holds %q (%v); want the first waiter %q", v, err, first)
					}
					m.Leave(ctx, first)
				}
				if err := <-got; err != nil {
					t.Fatalf("second waiter: %v", err)
				}
				keys, err := b.Client.Keys(ctx, "*lock:leave*").Result()
				if err != nil {
					t.Fatal(err)
				}
				if len(keys) != 0 {
					t.Fatalf("keys left (a stuck grant or queue entry): %v", keys)
				}
			})
		})
	}
}

func TestQueueMutexDeadHolderLeaseExpires(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const key = "lock:dead"
		m := locking.NewQueueMutex(b.Client, key, time.Minute, locking.WithQueuePoll(20*time.Millisecond))
		if _, err := m.Acquire(ctx); err != nil { // never released: the holder died
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			l, err := m.Acquire(ctx)
			if err == nil {
				err = l.Release(ctx)
			}
			got <- err
		}()
		waitQueued(ctx, t, b.Client, key, 1)
		b.Expire(t, key) // the dead holder's lease runs out
		if err := <-got; err != nil {
			t.Fatalf("waiter behind a dead holder: %v", err)
		}
	})
}

func TestQueueMutexDeadWaiterIsSkipped(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const key = "lock:skip"
		m := locking.NewQueueMutex(b.Client, key, time.Minute)
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
		if err := b.Client.Del(ctx, locking.AliveKey(key, "dead")).Err(); err != nil {
			t.Fatal(err)
		}
		got := make(chan *locking.QueueLock, 1)
		go func() {
			l, err := m.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		waitQueued(ctx, t, b.Client, key, 2)
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		l := <-got
		if l == nil {
			t.FailNow()
		}
		if v, err := b.Client.Get(ctx, key).Result(); err != nil || v != l.Token() {
			t.Fatalf("lock holds %q (%v); want the live waiter's token", v, err)
		}
		if until := time.Until(l.Expires()); until <= 0 || until > time.Minute {
			t.Fatalf("handed-over lease ends in %v; want within (0, 1m]", until)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestQueueMutexReleaseToken(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const key = "lock:token"
		m := locking.NewQueueMutex(b.Client, key, time.Minute)
		holder, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *locking.QueueLock, 1)
		go func() {
			l, err := m.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		waitQueued(ctx, t, b.Client, key, 1)
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
		l := <-got
		if l == nil {
			t.FailNow()
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := b.Client.Exists(ctx, key).Result(); err != nil || n != 0 {
			t.Fatalf("lock key exists %d (%v) after the last release; want 0", n, err)
		}
	})
}

// TestQueueMutexOnRedisCluster hands the lock over on a three-master
// Redis Cluster with a key that carries no hash tag: the queue, liveness
// and grant keys the scripts touch must all land in the lock key's slot.
func TestQueueMutexOnRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	rdb, _ := redistest.Cluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := locking.NewQueueMutex(rdb, "inventory", time.Minute)
	holder, err := m.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := m.Acquire(ctx)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	waitQueued(ctx, t, rdb, "inventory", 1)
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter on the cluster: %v", err)
	}
}
