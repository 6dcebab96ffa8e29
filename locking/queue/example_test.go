package queue_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking/queue"
)

// A Mutex serves waiters in arrival order: the release hands the lock to
// the first waiter inside Redis.
func ExampleMutex() {
	srv, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	m := queue.NewMutex(rdb, "report:2026", 30*time.Second)
	first, err := m.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	second := make(chan *queue.Lock)
	go func() {
		l, err := m.Acquire(ctx) // queues behind first
		if err != nil {
			panic(err)
		}
		second <- l
	}()
	for n, err := m.Queued(ctx); n == 0; n, err = m.Queued(ctx) {
		if err != nil {
			panic(err)
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println("first holds the lock, one waiter queued")
	if err := first.Release(ctx); err != nil { // hands over
		panic(err)
	}
	l := <-second
	fmt.Println("second holds the lock, after", l.Waits(), "poll intervals")
	fmt.Println("second releases:", l.Release(ctx))
	// Output:
	// first holds the lock, one waiter queued
	// second holds the lock, after 0 poll intervals
	// second releases: <nil>
}
