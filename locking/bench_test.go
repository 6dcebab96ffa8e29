package locking_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

// The benchmarks run against a private redis-server (they are skipped
// without one) and time one acquire+release per operation. Run them with
//
//	go test -run '^$' -bench . -benchmem -count 10 ./locking > new.txt
//
// and compare two such runs with benchstat old.txt new.txt.

// holder is one acquisition of any lock type, released by Release.
type holder interface {
	Release(ctx context.Context) error
}

// lockKind builds an acquire function for one lock type on key. rdbs are
// independent servers; all kinds but RedlockMutex use the first.
type lockKind struct {
	name    string
	servers int
	acquire func(rdbs []redis.UniversalClient, key string) func(ctx context.Context) (holder, error)
}

const benchTTL = 10 * time.Second

var lockKinds = []lockKind{
	{name: "mutex", servers: 1, acquire: func(rdbs []redis.UniversalClient, key string) func(context.Context) (holder, error) {
		m := locking.NewMutex(rdbs[0], key, benchTTL)
		return func(ctx context.Context) (holder, error) { return m.Acquire(ctx) }
	}},
	{name: "mutex-fencing", servers: 1, acquire: func(rdbs []redis.UniversalClient, key string) func(context.Context) (holder, error) {
		m := locking.NewMutex(rdbs[0], key, benchTTL, locking.WithFencing())
		return func(ctx context.Context) (holder, error) { return m.Acquire(ctx) }
	}},
	{name: "mutex-wakeups", servers: 1, acquire: func(rdbs []redis.UniversalClient, key string) func(context.Context) (holder, error) {
		m := locking.NewMutex(rdbs[0], key, benchTTL, locking.WithWakeups())
		return func(ctx context.Context) (holder, error) { return m.Acquire(ctx) }
	}},
	{name: "mutex-watchdog", servers: 1, acquire: func(rdbs []redis.UniversalClient, key string) func(context.Context) (holder, error) {
		m := locking.NewMutex(rdbs[0], key, benchTTL)
		return func(ctx context.Context) (holder, error) {
			l, _, err := m.AcquireKeepAlive(ctx)
			return l, err
		}
	}},
	{name: "reentrant", servers: 1, acquire: func(rdbs []redis.UniversalClient, key string) func(context.Context) (holder, error) {
		r := locking.NewReentrantMutex(rdbs[0], key, benchTTL)
		return func(ctx context.Context) (holder, error) {
			if _, ok := locking.OwnerFrom(ctx); !ok {
				ctx = locking.WithOwner(ctx, key)
			}
			return r.Acquire(ctx)
		}
	}},
	{name: "rwmutex-read", servers: 1, acquire: func(rdbs []redis.UniversalClient, key string) func(context.Context) (holder, error) {
		rw := locking.NewRWMutex(rdbs[0], key, benchTTL)
		return func(ctx context.Context) (holder, error) { return rw.AcquireRead(ctx) }
	}},
	{name: "rwmutex-write", servers: 1, acquire: func(rdbs []redis.UniversalClient, key string) func(context.Context) (holder, error) {
		rw := locking.NewRWMutex(rdbs[0], key, benchTTL)
		return func(ctx context.Context) (holder, error) { return rw.AcquireWrite(ctx) }
	}},
	{name: "redlock-3", servers: 3, acquire: func(rdbs []redis.UniversalClient, key string) func(context.Context) (holder, error) {
		r := locking.NewRedlockMutex(rdbs[:3], key, benchTTL)
		return func(ctx context.Context) (holder, error) { return r.Acquire(ctx) }
	}},
}

// benchServers starts n private redis-servers for a benchmark.
func benchServers(b *testing.B, n int) []redis.UniversalClient {
	b.Helper()
	rdbs := make([]redis.UniversalClient, n)
	for i := range rdbs {
		rdbs[i] = redistest.Real(b).Client
	}
	return rdbs
}

// acquireRelease takes the lock and gives it back. It returns the error
// rather than failing b, since RunParallel's goroutines may not call
// b.Fatal.
func acquireRelease(ctx context.Context, acquire func(context.Context) (holder, error)) error {
	h, err := acquire(ctx)
	if err != nil {
		return err
	}
	return h.Release(ctx)
}

// BenchmarkAcquireRelease is one goroutine taking and giving back a free
// lock: the cost of the uncontended path, in round trips and allocations.
func BenchmarkAcquireRelease(b *testing.B) {
	rdbs := benchServers(b, 3)
	ctx := context.Background()
	for _, k := range lockKinds {
		b.Run(k.name, func(b *testing.B) {
			acquire := k.acquire(rdbs, "bench:serial:"+k.name)
			if err := acquireRelease(ctx, acquire); err != nil { // load the scripts
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := acquireRelease(ctx, acquire); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAcquireReleaseParallel is GOMAXPROCS goroutines (times -cpu),
// each taking and giving back its own lock: uncontended throughput.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	rdbs := benchServers(b, 3)
	ctx := context.Background()
	for _, k := range lockKinds {
		b.Run(k.name, func(b *testing.B) {
			var next atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				key := fmt.Sprintf("bench:parallel:%s:%d", k.name, next.Add(1))
				acquire := k.acquire(rdbs, key)
				for pb.Next() {
					if err := acquireRelease(ctx, acquire); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkContended is goroutines sharing one lock: ns/op is the time
// per acquisition of the whole group, so 1e9/ns/op is acquisitions per
// second. Only the mutual-exclusion kinds are measured (read holds share).
func BenchmarkContended(b *testing.B) {
	rdbs := benchServers(b, 3)
	ctx := context.Background()
	for _, k := range lockKinds {
		if k.name == "rwmutex-read" {
			continue
		}
		procs := runtime.GOMAXPROCS(0)
		for _, p := range []int{1, max(1, 10/procs)} {
			// RunParallel starts p*GOMAXPROCS goroutines.
			g := p * procs
			if p > 1 && g == procs {
				continue
			}
			b.Run(fmt.Sprintf("%s/goroutines=%d", k.name, g), func(b *testing.B) {
				var worker atomic.Int64
				key := fmt.Sprintf("bench:contended:%s:%d", k.name, g)
				b.ReportAllocs()
				b.SetParallelism(p)
				b.RunParallel(func(pb *testing.PB) {
					acquire := k.acquire(rdbs, key)
					if k.name == "reentrant" {
						// Each goroutine is its own owner.
						owner := fmt.Sprintf("%s-%d", key, worker.Add(1))
						base := acquire
						acquire = func(ctx context.Context) (holder, error) {
							return base(locking.WithOwner(ctx, owner))
						}
					}
					for pb.Next() {
						if err := acquireRelease(ctx, acquire); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
