package redisconn_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestSizedClientDialing checks that the new client talks to the same
// server through the dial given, with the pool asked for and the hooks.
func TestSizedClientDialing(t *testing.T) {
	b := redistest.Mini(t)
	var dials atomic.Int64
	var d net.Dialer
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	var hooked atomic.Int64
	c := redisconn.SizedClientDialing(b.Client, 40, dial, countHook{&hooked})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := b.Client.Get(ctx, "k").Val(); v != "v" {
		t.Errorf("the original client reads %q", v)
	}
	if dials.Load() == 0 || hooked.Load() == 0 {
		t.Errorf("dials %d, hooked commands %d", dials.Load(), hooked.Load())
	}
	if got := c.(*redis.Client).Options().PoolSize; got != 40 {
		t.Errorf("pool %d, want 40", got)
	}
	plain := redisconn.SizedClient(b.Client, 1)
	defer plain.Close()
	if got, want := plain.(*redis.Client).Options().PoolSize, b.Client.Options().PoolSize; got != want {
		t.Errorf("a smaller pool asked for: %d, want the original's %d", got, want)
	}
}

type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
