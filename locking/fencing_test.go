package locking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

func TestFenceKeyAndChannelShareTheSlot(t *testing.T) {
	for _, tc := range []struct{ key, fence, channel string }{
		{"lock:a", "{lock:a}:fence", "{lock:a}:released"},
		{"{m}:lock:market:", "{m}:lock:market::fence", "{m}:lock:market::released"},
		{"x{tag}y", "x{tag}y:fence", "x{tag}y:released"},
		{"odd{}key", "odd{}key:fence", "odd{}key:released"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			if got := locking.FenceKey(tc.key); got != tc.fence {
				t.Errorf("FenceKey = %q, want %q", got, tc.fence)
			}
			if got := locking.WakeupChannel(tc.key); got != tc.channel {
				t.Errorf("WakeupChannel = %q, want %q", got, tc.channel)
			}
		})
	}
}

func TestFencingTokensStrictlyIncrease(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		m := locking.NewMutex(b.Client, "lock:f", 10*time.Second, locking.WithFencing())
		var last int64
		for i := range 6 {
			l, err := m.TryAcquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if l.Fence() <= last {
				t.Fatalf("acquisition %d: fence %d not above %d", i, l.Fence(), last)
			}
			last = l.Fence()
			if _, err := m.TryAcquire(ctx); !errors.Is(err, locking.ErrNotAcquired) {
				t.Fatalf("second holder admitted: %v", err)
			}
			if i%2 == 0 {
				if err := l.Release(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				b.Expire(t, "lock:f") // the holder lost its lease instead
			}
		}
		// A plain mutex on the key still excludes, and does not touch the counter.
		if n, _ := b.Client.Get(ctx, locking.FenceKey("lock:f")).Int64(); n != last {
			t.Fatalf("counter %d, want %d", n, last)
		}
	})
}

func TestHeldRefusesCommitAfterLeaseLoss(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, b *redistest.Backend, key string)
	}{
		{"expired", func(t *testing.T, b *redistest.Backend, key string) { b.Expire(t, key) }},
		{"taken over", func(t *testing.T, b *redistest.Backend, key string) {
			b.Expire(t, key)
			if _, err := locking.NewMutex(b.Client, key, time.Minute).TryAcquire(context.Background()); err != nil {
				t.Fatal(err)
			}
		}},
		{"kept", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := context.Background()
				l, err := locking.NewMutex(b.Client, "lock:h", time.Minute).TryAcquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				err = b.Client.Watch(ctx, func(tx *redis.Tx) error {
					if err := l.Held(ctx, tx); err != nil {
						return err
					}
					if tc.lose != nil {
						tc.lose(t, b, "lock:h") // the holder pauses here
					}
					_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, "resource", "written", 0)
						return nil
					})
					return err
				}, "lock:h")
				written := b.Client.Exists(ctx, "resource").Val() == 1
				if tc.lose == nil {
					if err != nil || !written {
						t.Fatalf("holder's commit refused: %v", err)
					}
					return
				}
				if !errors.Is(err, redis.TxFailedErr) || written {
					t.Fatalf("stale commit: err %v, written %v; want TxFailedErr and nothing written", err, written)
				}
				// Retrying, as watchtx does, now fails the ownership check.
				err = b.Client.Watch(ctx, func(tx *redis.Tx) error { return l.Held(ctx, tx) }, "lock:h")
				if !errors.Is(err, locking.ErrNotHeld) {
					t.Fatalf("Held after loss: %v, want ErrNotHeld", err)
				}
			})
		})
	}
}

func TestCheckFenceRefusesOlderHolders(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		for _, tc := range []struct {
			fence int64
			want  error
		}{{3, nil}, {3, nil}, {5, nil}, {4, locking.ErrStaleFence}, {1, locking.ErrStaleFence}, {6, nil}} {
			if err := locking.CheckFence(ctx, b.Client, "res:seen", tc.fence); !errors.Is(err, tc.want) {
				t.Fatalf("fence %d: %v, want %v", tc.fence, err, tc.want)
			}
		}
	})
}
