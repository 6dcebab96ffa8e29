package locking_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

// exampleRedis starts an embedded Redis for an example.
var exampleRedis = redistest.Embedded

func ExampleMutex() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	m := locking.NewMutex(rdb, "lock:report", 10*time.Second)
	l, err := m.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	_, err = m.TryAcquire(ctx)
	fmt.Println("second client:", errors.Is(err, locking.ErrNotAcquired))
	fmt.Println("release:", l.Release(ctx))
	fmt.Println("release again:", l.Release(ctx))
	// Output:
	// second client: true
	// release: <nil>
	// release again: locking: lock not held
}

func ExampleWithFencing() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	m := locking.NewMutex(rdb, "lock:ledger", 10*time.Second, locking.WithFencing())
	for range 3 {
		l, err := m.Acquire(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println("fence", l.Fence())
		l.Release(ctx)
	}
	// Output:
	// fence 1
	// fence 2
	// fence 3
}

// A holder paused past its lease writes after the next holder: the
// storage has accepted the newer fence, so the stale write is refused and
// the newer data stays.
func ExampleFencedWrite() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	m := locking.NewMutex(rdb, "lock:ledger", 10*time.Second, locking.WithFencing())
	write := func(l *locking.Lock, entry string) error {
		return locking.FencedWrite(ctx, rdb, "ledger:fence", l.Fence(), func(p redis.Pipeliner) {
			p.Set(ctx, "ledger", entry, 0)
		})
	}
	old, _ := m.Acquire(ctx)
	rdb.Del(ctx, "lock:ledger") // old is paused and its lease runs out
	next, _ := m.Acquire(ctx)
	fmt.Println("next, fence", next.Fence(), "writes:", write(next, "next entry"))
	fmt.Println("old, fence", old.Fence(), "writes:", write(old, "stale write"))
	fmt.Println("ledger:", rdb.Get(ctx, "ledger").Val())
	// Output:
	// next, fence 2 writes: <nil>
	// old, fence 1 writes: locking: stale fencing token: fence 1, ledger:fence accepted 2
	// ledger: next entry
}

func ExampleMutex_AcquireKeepAlive() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	m := locking.NewMutex(rdb, "lock:job", 300*time.Millisecond)
	l, work, err := m.AcquireKeepAlive(ctx)
	if err != nil {
		panic(err)
	}
	// Someone deletes the lock behind the holder's back: the watchdog's
	// next extension is refused and the work context is cancelled.
	rdb.Del(ctx, "lock:job")
	<-work.Done()
	fmt.Println(context.Cause(work))
	fmt.Println(l.Release(ctx))
	// Output:
	// locking: lock lost: extension refused: locking: lock not held
	// locking: lock not held
}

func ExampleReentrantMutex() {
	rdb, stop := exampleRedis()
	defer stop()
	r := locking.NewReentrantMutex(rdb, "lock:account", 10*time.Second)
	alice := locking.WithOwner(context.Background(), "alice")
	bob := locking.WithOwner(context.Background(), "bob")

	outer, _ := r.Acquire(alice)
	inner, _ := r.Acquire(alice) // a nested call takes it again
	_, err := r.TryAcquire(bob)
	fmt.Println("alice holds", outer.Depth, "then", inner.Depth, "- bob:", err)
	fmt.Println("inner release:", inner.Release(alice))
	fmt.Println("inner release again:", inner.Release(alice))
	left, _ := r.Count(alice)
	fmt.Println("alice's holds left:", left)
	fmt.Println("outer release:", outer.Release(alice))
	_, err = r.TryAcquire(bob)
	fmt.Println("bob:", err)
	// Output:
	// alice holds 1 then 2 - bob: locking: lock not acquired
	// inner release: <nil>
	// inner release again: locking: lock not held
	// alice's holds left: 1
	// outer release: <nil>
	// bob: <nil>
}

func ExampleRWMutex() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()
	rw := locking.NewRWMutex(rdb, "{prices}", 10*time.Second)

	r1, _ := rw.AcquireRead(ctx)
	r2, _ := rw.AcquireRead(ctx)
	_, err := rw.TryAcquireWrite(ctx)
	fmt.Println("writer beside two readers:", err)
	r2.Release(ctx)
	_, err = rw.TryAcquireWrite(ctx)
	fmt.Println("writer after one reader left:", err)
	r1.Release(ctx)
	w, err := rw.TryAcquireWrite(ctx)
	fmt.Println("writer after both left:", err)
	w.Release(ctx)
	// Output:
	// writer beside two readers: locking: lock not acquired
	// writer after one reader left: locking: lock not acquired
	// writer after both left: <nil>
}

func ExampleRedlockMutex() {
	var clients []redis.UniversalClient
	var servers []*miniredis.Miniredis
	for range 5 {
		mr, err := miniredis.Run()
		if err != nil {
			panic(err)
		}
		defer mr.Close()
		servers = append(servers, mr)
		c := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
		defer c.Close()
		clients = append(clients, c)
	}
	ctx := context.Background()
	const ttl = 10 * time.Second
	rl := locking.NewRedlockMutex(clients, "lock:payout", ttl, locking.WithNodeTimeout(200*time.Millisecond))

	start := time.Now()
	h, err := rl.TryAcquire(ctx)
	fmt.Println("acquired:", err, "- quorum", rl.Quorum())
	// Valid for the lease less the drift allowance, counted from the start
	// of the attempt.
	fmt.Println("valid from the start, less the drift:", !h.Expires().Before(start.Add(ttl-rl.Drift(ttl))))
	_, err = rl.TryAcquire(ctx)
	fmt.Println("second client taken:", errors.Is(err, locking.ErrTaken))
	h.Release(ctx)

	for _, mr := range servers[:3] {
		mr.Close()
	}
	_, err = rl.TryAcquire(ctx)
	fmt.Println("three servers down:", errors.Is(err, locking.ErrQuorumUnreachable))
	// Output:
	// acquired: <nil> - quorum 3
	// valid from the start, less the drift: true
	// second client taken: true
	// three servers down: true
}
