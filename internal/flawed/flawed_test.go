package flawed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/flawed"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

// Each test reproduces one recipe's documented failure at the lock level,
// with the fault injected through the recipe's hook.

func TestGetThenSetAdmitsTwo(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		second := &flawed.GetThenSet{RDB: b.Client, Key: "lock"}
		var secondErr error
		first := &flawed.GetThenSet{RDB: b.Client, Key: "lock", Hook: func(ctx context.Context, point string) error {
			// Between the first client's GET and SET the second one runs.
			_, secondErr = second.TryAcquire(ctx)
			return nil
		}}
		if _, err := first.TryAcquire(ctx); err != nil || secondErr != nil {
			t.Fatalf("first %v, second %v: want both admitted", err, secondErr)
		}
		if _, err := second.TryAcquire(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("without interleaving a third client is refused: %v", err)
		}
	})
}

func TestNoExpiryLocksForever(t *testing.T) {
	crash := func(context.Context, string) error { return flawed.ErrCrashed }
	for _, tc := range []struct {
		name string
		lock func(b *redistest.Backend) flawed.Lock
	}{
		{"SETNX", func(b *redistest.Backend) flawed.Lock { return &flawed.SetNX{RDB: b.Client, Key: "lock"} }},
		{"SETNX then EXPIRE", func(b *redistest.Backend) flawed.Lock {
			return &flawed.SetNXThenExpire{RDB: b.Client, Key: "lock", TTL: time.Second, Hook: crash}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := context.Background()
				l := tc.lock(b)
				_, err := l.TryAcquire(ctx) // and the holder dies
				if err != nil && !errors.Is(err, flawed.ErrCrashed) {
					t.Fatal(err)
				}
				if ttl := b.Client.TTL(ctx, "lock").Val(); ttl != -1 {
					t.Fatalf("ttl %v, want -1 (no expiry)", ttl)
				}
				if b.Mini != nil {
					b.Mini.FastForward(24 * time.Hour)
				}
				if _, err := l.TryAcquire(ctx); !errors.Is(err, locking.ErrNotAcquired) {
					t.Fatalf("lock free again: %v", err)
				}
			})
		})
	}
	t.Run("SETNX then EXPIRE without crash", func(t *testing.T) {
		redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
			l := &flawed.SetNXThenExpire{RDB: b.Client, Key: "lock", TTL: time.Second}
			if _, err := l.TryAcquire(context.Background()); err != nil {
				t.Fatal(err)
			}
			if ttl := b.Client.PTTL(context.Background(), "lock").Val(); ttl <= 0 {
				t.Fatalf("ttl %v", ttl)
			}
		})
	})
}

func TestStaleHolderDeletesNextHoldersLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		lock func(b *redistest.Backend, hook flawed.Hook) flawed.Lock
		// pausedInRelease: the stale holder's pause is inside Release.
		pausedInRelease bool
	}{
		{"SET NX PX + DEL", func(b *redistest.Backend, _ flawed.Hook) flawed.Lock {
			return &flawed.SetPXThenDel{RDB: b.Client, Key: "lock", TTL: 5 * time.Second}
		}, false},
		{"GET compare DEL", func(b *redistest.Backend, hook flawed.Hook) flawed.Lock {
			return &flawed.CompareThenDel{RDB: b.Client, Key: "lock", TTL: 5 * time.Second, Hook: hook}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
				ctx := context.Background()
				var next flawed.Lock
				var nextToken string
				takeOver := func() {
					b.Expire(t, "lock") // the first holder's lease runs out
					var err error
					if nextToken, err = next.TryAcquire(ctx); err != nil {
						t.Fatalf("second holder: %v", err)
					}
				}
				l := tc.lock(b, func(context.Context, string) error { takeOver(); return nil })
				next = tc.lock(b, nil)
				token, err := l.TryAcquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !tc.pausedInRelease {
					takeOver()
				}
				if err := l.Release(ctx, token); err != nil {
					t.Fatal(err)
				}
				if nextToken == "" {
					t.Fatal("the pause never happened")
				}
				third := tc.lock(b, nil)
				if _, err := third.TryAcquire(ctx); err != nil {
					t.Fatalf("third client refused, so the second's lock survived: %v", err)
				}
			})
		})
	}
}

func TestBookTimeoutHealsCrashButNotPause(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		crashing := &flawed.BookTimeout{RDB: b.Client, Key: "lock", TTL: 2 * time.Second,
			Hook: func(context.Context, string) error { return flawed.ErrCrashed }}
		if _, err := crashing.TryAcquire(ctx); !errors.Is(err, flawed.ErrCrashed) {
			t.Fatal(err)
		}
		l := &flawed.BookTimeout{RDB: b.Client, Key: "lock", TTL: 2 * time.Second}
		// A waiter finds the lock without expiry and gives it one.
		if _, err := l.TryAcquire(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatal(err)
		}
		if ttl := b.Client.TTL(ctx, "lock").Val(); ttl != 2*time.Second {
			t.Fatalf("ttl after fix-up %v, want 2s", ttl)
		}
		b.Expire(t, "lock")
		old, err := l.TryAcquire(ctx)
		if err != nil {
			t.Fatalf("lock not healed: %v", err)
		}
		// The holder pauses past its timeout; another client takes over.
		b.Expire(t, "lock")
		if _, err := l.TryAcquire(ctx); err != nil {
			t.Fatal(err)
		}
		// Its release is refused (right), but nothing stopped it from
		// acting as holder meanwhile: that is the gallery's case.
		if err := l.Release(ctx, old); !errors.Is(err, locking.ErrNotHeld) {
			t.Fatalf("stale release: %v", err)
		}
	})
}

func TestSeedRWLockReaderDeletesOthersHold(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		clock := time.UnixMilli(1_700_000_000_000)
		tick := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
		l := &flawed.SeedRWLock{RDB: b.Client, Key: "{rw}", KeyTTL: 10 * time.Second,
			ReadTTL: time.Second, WriteTTL: 3 * time.Second, Now: tick}
		r1, err := l.TryAcquireRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.TryAcquireWrite(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("writer beside one reader: %v", err)
		}
		r2, err := l.TryAcquireRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.ReleaseRead(ctx, r2); err != nil {
			t.Fatal(err)
		}
		// Reader 1 never released, yet the writer gets in.
		w, err := l.TryAcquireWrite(ctx)
		if err != nil {
			t.Fatalf("writer refused: %v (the flaw did not show)", err)
		}
		if _, err := l.TryAcquireRead(ctx); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("reader beside writer: %v", err)
		}
		l.ReleaseRead(ctx, r1)
		l.ReleaseWrite(ctx, w)
	})
}
