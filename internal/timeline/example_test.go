package timeline_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/timeline"
)

// Two clients and one lock: what each sent is read for what it meant.
func Example() {
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	rdb.AddHook(timeline.Hook{})

	rec := timeline.NewRecorder("{m}:")
	ctx := context.Background()
	a, b := rec.As(ctx, "A"), rec.As(ctx, "B")
	rdb.SetNX(a, "{m}:lock:x", "tok-a", 1500*time.Millisecond)
	rdb.SetNX(b, "{m}:lock:x", "tok-b", 1500*time.Millisecond)
	rdb.Del(b, "{m}:lock:x")   // B deletes A's lock
	rdb.Get(ctx, "{m}:lock:x") // names no client: not recorded

	tl := rec.Finish("example", "", "", 0)
	for _, s := range tl.Steps(false) {
		fmt.Printf("%s %s: %s", s.Client, s.Kind, s.Text)
		if s.Violation != "" {
			fmt.Printf(" [%s]", s.Violation)
		}
		fmt.Println()
	}
	// Output:
	// A acquire: SET PX NX → holds lock:x (token tok-a, lease 1.5s)
	// B acquire_failed: SET PX NX → lock:x is held by A
	// B release: DEL → deletes lock:x, which A holds [deletes A's lock]
}
