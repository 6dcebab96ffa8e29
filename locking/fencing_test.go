package locking_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
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

// TestFencedWriteRefusesStaleWrites: a write whose fence is below the
// highest accepted is refused and leaves the data as it was; the issue's
// case is a fence of 7 after 100 was accepted, on a fresh server (no
// script cached).
func TestFencedWriteRefusesStaleWrites(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		write := func(fence int64, value string) error {
			return locking.FencedWrite(ctx, b.Client, "res:seen", fence, func(p redis.Pipeliner) {
				p.Set(ctx, "res:data", value, 0)
			})
		}
		for _, tc := range []struct {
			fence     int64
			want      error
			data      string // the data afterwards
			highWater int64  // the highest accepted afterwards
		}{
			{100, nil, "w100", 100},
			{7, locking.ErrStaleFence, "w100", 100},
			{100, nil, "w100 again", 100}, // one holder writes as often as it likes
			{101, nil, "w101", 101},
			{100, locking.ErrStaleFence, "w101", 101},
			{0, locking.ErrNoFence, "w101", 101},
			{-3, locking.ErrNoFence, "w101", 101},
		} {
			value := tc.data
			if tc.want != nil {
				value = "stale write"
			}
			err := write(tc.fence, value)
			if !errors.Is(err, tc.want) {
				t.Fatalf("fence %d: %v, want %v", tc.fence, err, tc.want)
			}
			data := b.Client.Get(ctx, "res:data").Val()
			seen, _ := b.Client.Get(ctx, "res:seen").Int64()
			if data != tc.data || seen != tc.highWater {
				t.Fatalf("after fence %d: data %q, high-water %d; want %q, %d", tc.fence, data, seen, tc.data, tc.highWater)
			}
		}
	})
}

// TestFencedWriteOvertakenAtExec: a newer holder's write lands between an
// older holder's check and its EXEC; the older write is refused, not
// applied after the newer one.
func TestFencedWriteOvertakenAtExec(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		newer := b.NewClient(t)
		calls := 0
		err := locking.FencedWrite(ctx, b.Client, "res:seen", 7, func(p redis.Pipeliner) {
			calls++
			if calls == 1 {
				// The check passed (nothing accepted yet); now the newer
				// holder writes before this EXEC.
				must(t, locking.FencedWrite(ctx, newer, "res:seen", 8, func(p redis.Pipeliner) {
					p.Set(ctx, "res:data", "newer", 0)
				}))
			}
			p.Set(ctx, "res:data", "stale write", 0)
		})
		if !errors.Is(err, locking.ErrStaleFence) {
			t.Fatalf("overtaken write: %v, want ErrStaleFence", err)
		}
		if got := b.Client.Get(ctx, "res:data").Val(); got != "newer" || calls != 1 {
			t.Fatalf("data %q after %d attempts; want the newer write after 1", got, calls)
		}
	})
}

// TestFencedWritesNeverGoBack: writers with random fences write at once;
// every accepted write also appends its fence to a log in the same
// transaction, so the log is the order in which writes were applied. It
// must never go down.
func TestFencedWritesNeverGoBack(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		var accepted, refused atomic.Int64
		contend(t, 8, 25, func(ctx context.Context, w int) error {
			fence := rand.Int64N(50) + 1
			err := locking.FencedWrite(ctx, b.Client, "{res}:seen", fence, func(p redis.Pipeliner) {
				p.Set(ctx, "{res}:data", fence, 0)
				p.RPush(ctx, "{res}:log", fence)
			})
			switch {
			case err == nil:
				accepted.Add(1)
			case errors.Is(err, locking.ErrStaleFence):
				refused.Add(1)
			default:
				return err
			}
			return nil
		})
		log, err := b.Client.LRange(context.Background(), "{res}:log", 0, -1).Result()
		must(t, err)
		if int64(len(log)) != accepted.Load() || accepted.Load()+refused.Load() != 8*25 {
			t.Fatalf("%d log entries, %d accepted, %d refused; want one entry per accepted write of 200",
				len(log), accepted.Load(), refused.Load())
		}
		for i := 1; i < len(log); i++ {
			prev, _ := strconv.ParseInt(log[i-1], 10, 64)
			cur, _ := strconv.ParseInt(log[i], 10, 64)
			if cur < prev {
				t.Fatalf("write %d applied fence %d after fence %d", i, cur, prev)
			}
		}
	})
}
