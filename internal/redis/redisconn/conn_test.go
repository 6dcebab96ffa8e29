package redisconn_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	real := redistest.Real(t)
	cluster, _ := redistest.Cluster(t, 3)

	t.Run("REDIS_URL wins", func(t *testing.T) {
		t.Setenv("REDIS_URL", "redis://"+real.Addr()+"/0")
		var log bytes.Buffer
		c, err := redisconn.Open(ctx, "auto", &log)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Mode != redisconn.ModeURL || !strings.Contains(log.String(), "REDIS_URL") {
			t.Fatalf("mode %s, log %q", c.Mode, log.String())
		}
	})
	t.Run("private redis-server", func(t *testing.T) {
		t.Setenv("REDIS_URL", "")
		var log bytes.Buffer
		c, err := redisconn.Open(ctx, "auto", &log)
		if err != nil {
			t.Fatal(err)
		}
		srv := c.Server
		if c.Mode != redisconn.ModeRedisServer || srv == nil || c.Version == "" {
			t.Fatalf("mode %s, version %q", c.Mode, c.Version)
		}
		c.Close()
		if srv.Pid() != 0 {
			t.Fatal("Close left the private server running")
		}
	})
	t.Run("miniredis when nothing is installed", func(t *testing.T) {
		t.Setenv("REDIS_URL", "")
		t.Setenv("PATH", t.TempDir())
		var log bytes.Buffer
		c, err := redisconn.Open(ctx, "", &log)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Mode != redisconn.ModeMiniredis || !c.Illustrative() || !strings.Contains(log.String(), "illustrative") {
			t.Fatalf("mode %s, log %q", c.Mode, log.String())
		}
		if err := c.Client.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("one address", func(t *testing.T) {
		c, err := redisconn.Open(ctx, real.Addr(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Mode != redisconn.ModeURL {
			t.Fatalf("mode %s", c.Mode)
		}
		// Each pooled connection's buffers are 8 KiB, not go-redis's 32 KiB.
		if o := c.Client.(*redis.Client).Options(); o.ReadBufferSize != 8<<10 || o.WriteBufferSize != 8<<10 {
			t.Fatalf("buffers %d/%d bytes, want 8 KiB each", o.ReadBufferSize, o.WriteBufferSize)
		}
	})
	t.Run("cluster list", func(t *testing.T) {
		c, err := redisconn.Open(ctx, strings.Join(cluster.Options().Addrs, ","), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Mode != redisconn.ModeCluster {
			t.Fatalf("mode %s", c.Mode)
		}
	})
	for _, bad := range []string{"nonsense", "redis://127.0.0.1:1/0", "127.0.0.1:1", "a:1,,b:2", "http://%zz"} {
		t.Run("bad "+bad, func(t *testing.T) {
			if c, err := redisconn.Open(ctx, bad, nil); err == nil {
				c.Close()
				t.Fatalf("Open(%q) succeeded", bad)
			}
		})
	}
}
