package netdelay_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/netdelay"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestDialerSingleServer routes a go-redis client through a Dialer: its
// commands work, one proxy serves them, and once the Dialer is closed they
// fail, so none went around it.
func TestDialerSingleServer(t *testing.T) {
	t.Parallel() // servers of its own
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		d, err := netdelay.NewDialer(time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		c := redis.NewClient(&redis.Options{Addr: b.Addr(), Dialer: d.Dial, PoolSize: 4, MaxRetries: -1})
		defer c.Close()
		for i := range 20 {
			if err := c.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
		}
		if got := b.Client.Get(ctx, "k19").Val(); got != "19" {
			t.Fatalf("k19 = %q on the server", got)
		}
		if n := d.Upstreams(); n != 1 {
			t.Fatalf("%d proxies, want 1", n)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		if err := c.Ping(ctx).Err(); err == nil {
			t.Fatal("PING succeeded after the Dialer was closed")
		}
		if _, err := d.Dial(ctx, "tcp", b.Addr()); !errors.Is(err, netdelay.ErrClosed) {
			t.Fatalf("dial after close: %v, want %v", err, netdelay.ErrClosed)
		}
	})
}

// TestDialerCluster routes a Redis Cluster client through a Dialer: every
// master gets a proxy of its own, keys of every slot are written, and once
// the Dialer is closed no node answers, so no connection went around it.
func TestDialerCluster(t *testing.T) {
	const masters = 3
	direct, cl := redistest.Cluster(t, masters)
	ctx := context.Background()
	d, err := netdelay.NewDialer(time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), Dialer: d.Dial, MaxRetries: -1})
	defer c.Close()
	const keys = 200
	for i := range keys {
		if err := c.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatalf("SET k%d: %v", i, err)
		}
	}
	for i := range keys {
		if got := direct.Get(ctx, fmt.Sprint("k", i)).Val(); got != fmt.Sprint(i) {
			t.Fatalf("k%d = %q read directly", i, got)
		}
	}
	if n := d.Upstreams(); n < masters {
		t.Fatalf("%d proxies, want one for each of the %d masters", n, masters)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for i := range keys {
		if err := c.Get(ctx, fmt.Sprint("k", i)).Err(); err == nil {
			t.Fatalf("GET k%d succeeded after the Dialer was closed", i)
		}
	}
}

func TestDialerRefuses(t *testing.T) {
	if _, err := netdelay.NewDialer(-time.Nanosecond); !errors.Is(err, netdelay.ErrNegativeRTT) {
		t.Fatalf("NewDialer(-1ns): %v, want %v", err, netdelay.ErrNegativeRTT)
	}
	d, err := netdelay.NewDialer(0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Dial(context.Background(), "unix", "/tmp/redis.sock"); err == nil {
		t.Fatal("dialed a unix socket")
	}
}
