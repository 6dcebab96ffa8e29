package watchtx_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/watchtx"
)

// incr is a read-modify-write that needs WATCH to be correct.
func incr(ctx context.Context, c redis.UniversalClient, key string, opts watchtx.Options) (int, error) {
	return watchtx.Run(ctx, c, opts, func(tx *redis.Tx) error {
		n, err := tx.Get(ctx, key).Int()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, strconv.Itoa(n+1), 0)
			return nil
		})
		return err
	}, key)
}

func TestConcurrentIncrementsAreNotLost(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		const workers, each = 8, 25
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		for range workers {
			wg.Go(func() {
				for range each {
					r, err := incr(ctx, b.Client, "n", watchtx.Options{})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					total += r
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if got := b.Client.Get(ctx, "n").Val(); got != strconv.Itoa(workers*each) {
			t.Fatalf("n = %s, want %d", got, workers*each)
		}
		t.Logf("%d increments needed %d retries", workers*each, total)
	})
}

func TestRetriesCountedAndLimited(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		other := redis.NewClient(&redis.Options{Addr: b.Client.Options().Addr})
		defer other.Close()
		// fn changes the watched key from another connection on each of
		// its first three runs, so those three EXECs must abort.
		runs := 0
		retries, err := watchtx.Run(ctx, b.Client, watchtx.Options{}, func(tx *redis.Tx) error {
			runs++
			if runs <= 3 {
				other.Incr(ctx, "k")
			}
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "done", "1", 0)
				return nil
			})
			return err
		}, "k")
		if err != nil || retries != 3 || runs != 4 {
			t.Fatalf("retries=%d runs=%d err=%v, want 3, 4, nil", retries, runs, err)
		}

		retries, err = watchtx.Run(ctx, b.Client, watchtx.Options{MaxRetries: 2}, func(tx *redis.Tx) error {
			other.Incr(ctx, "k")
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "never", "1", 0)
				return nil
			})
			return err
		}, "k")
		if !errors.Is(err, watchtx.ErrTooManyRetries) || !errors.Is(err, redis.TxFailedErr) || retries != 2 {
			t.Fatalf("retries=%d err=%v, want 2, ErrTooManyRetries", retries, err)
		}
		if b.Client.Exists(ctx, "never").Val() != 0 {
			t.Fatal("an aborted transaction wrote")
		}
	})
}

func TestContextEndsRetries(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		other := redis.NewClient(&redis.Options{Addr: b.Client.Options().Addr})
		defer other.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := watchtx.Run(ctx, b.Client, watchtx.Options{}, func(tx *redis.Tx) error {
			other.Incr(context.Background(), "k")
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "never", "1", 0)
				return nil
			})
			return err
		}, "k")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want deadline exceeded", err)
		}
	})
}

// pipedIncr is incr with the WATCH sent together with the read.
func pipedIncr(ctx context.Context, c redis.UniversalClient, key string) (int, error) {
	return watchtx.RunPiped(ctx, c, watchtx.Options{}, key, func(tx *redis.Tx) error {
		var get *redis.StringCmd
		_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			watchtx.Watch(ctx, p, key)
			get = p.Get(ctx, key)
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		n, _ := strconv.Atoi(get.Val())
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, strconv.Itoa(n+1), 0)
			return nil
		})
		return err
	})
}

func TestRunPipedIncrementsAreNotLost(t *testing.T) {
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 25 {
					if _, err := pipedIncr(ctx, b.Client, "n"); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if got := b.Client.Get(ctx, "n").Val(); got != "200" {
			t.Fatalf("n = %s, want 200", got)
		}
	})
}

func TestRunPipedOnCluster(t *testing.T) {
	c, _ := redistest.Cluster(t, 3)
	ctx := context.Background()
	for _, key := range []string{"{a}n", "{b}n", "{c}n"} {
		for range 3 {
			if _, err := pipedIncr(ctx, c, key); err != nil {
				t.Fatal(err)
			}
		}
		if got := c.Get(ctx, key).Val(); got != "3" {
			t.Fatalf("%s = %s, want 3", key, got)
		}
	}
}
