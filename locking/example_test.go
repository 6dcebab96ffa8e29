package locking_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
)

// exampleRedis starts an embedded Redis for an example.
func exampleRedis() (*redis.Client, func()) {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { rdb.Close(); mr.Close() }
}

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
		// The storage accepts a write only with the highest fence it has seen.
		fmt.Println("fence", l.Fence(), "write:", locking.CheckFence(ctx, rdb, "ledger:fence-seen", l.Fence()))
		l.Release(ctx)
	}
	fmt.Println("late write of fence 1:", locking.CheckFence(ctx, rdb, "ledger:fence-seen", 1))
	// Output:
	// fence 1 write: <nil>
	// fence 2 write: <nil>
	// fence 3 write: <nil>
	// late write of fence 1: locking: stale fencing token
}

func ExampleMutex_Hold() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()

	m := locking.NewMutex(rdb, "lock:job", 300*time.Millisecond)
	h, work, err := m.Hold(ctx)
	if err != nil {
		panic(err)
	}
	// Someone deletes the lock behind the holder's back: the watchdog's
	// next extension is refused and the work context is cancelled.
	rdb.Del(ctx, "lock:job")
	<-work.Done()
	fmt.Println(context.Cause(work))
	fmt.Println(h.Release(ctx))
	// Output:
	// locking: lock lost: extension refused
	// locking: lock not held
}

func ExampleReentrant() {
	rdb, stop := exampleRedis()
	defer stop()
	r := locking.NewReentrant(rdb, "lock:account", 10*time.Second)
	alice := locking.WithOwner(context.Background(), "alice")
	bob := locking.WithOwner(context.Background(), "bob")

	n1, _ := r.Acquire(alice)
	n2, _ := r.Acquire(alice) // a nested call takes it again
	_, err := r.TryAcquire(bob)
	fmt.Println("alice holds", n1, "then", n2, "- bob:", err)
	_, err = r.Release(bob)
	fmt.Println("bob releases:", err)
	left, _ := r.Release(alice)
	fmt.Println("alice releases, holds left:", left)
	left, _ = r.Release(alice)
	fmt.Println("alice releases, holds left:", left)
	// Output:
	// alice holds 1 then 2 - bob: locking: lock not acquired
	// bob releases: locking: lock not held
	// alice releases, holds left: 1
	// alice releases, holds left: 0
}

func ExampleRWMutex() {
	rdb, stop := exampleRedis()
	defer stop()
	ctx := context.Background()
	rw := locking.NewRWMutex(rdb, "{prices}", 10*time.Second)

	r1, _ := rw.RLock(ctx)
	r2, _ := rw.RLock(ctx)
	_, err := rw.TryLock(ctx)
	fmt.Println("writer beside two readers:", err)
	r2.Release(ctx)
	_, err = rw.TryLock(ctx)
	fmt.Println("writer after one reader left:", err)
	r1.Release(ctx)
	w, err := rw.TryLock(ctx)
	fmt.Println("writer after both left:", err)
	w.Release(ctx)
	// Output:
	// writer beside two readers: locking: lock not acquired
	// writer after one reader left: locking: lock not acquired
	// writer after both left: <nil>
}

func ExampleRedlock() {
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
	rl := locking.NewRedlock(clients, "lock:payout", 10*time.Second, locking.WithNodeTimeout(200*time.Millisecond))

	h, err := rl.TryAcquire(ctx)
	fmt.Println("acquired:", err, "- quorum", rl.Quorum(), "- valid for most of the lease:", h.Validity() > 9*time.Second)
	_, err = rl.TryAcquire(ctx)
	fmt.Println("second client taken:", errors.Is(err, locking.ErrTaken))
	h.Release(ctx)

	for _, mr := range servers[:3] {
		mr.Close()
	}
	_, err = rl.TryAcquire(ctx)
	fmt.Println("three servers down:", errors.Is(err, locking.ErrQuorumUnreachable))
	// Output:
	// acquired: <nil> - quorum 3 - valid for most of the lease: true
	// second client taken: true
	// three servers down: true
}
