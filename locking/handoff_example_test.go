package locking_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
)

// A QueueMutex serves waiters in arrival order: the release hands the lock
// to the first waiter inside Redis.
func ExampleQueueMutex() {
	srv, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	m := locking.NewQueueMutex(rdb, "report:2026", 30*time.Second)
	first, err := m.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	done := make(chan string)
	go func() {
		l, err := m.Acquire(ctx) // queues behind first
		if err != nil {
			panic(err)
		}
		defer l.Release(ctx)
		done <- "second holds the lock"
	}()
	for rdb.LLen(ctx, locking.QueueKey("report:2026")).Val() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := first.Release(ctx); err != nil { // hands over
		panic(err)
	}
	fmt.Println(<-done)
	// Output: second holds the lock
}
