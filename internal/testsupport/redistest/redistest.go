// Package redistest gives tests a real redis-server and an embedded
// miniredis, so that every test can run against both.
//
// A test that needs a real server, a cluster or a browser that is missing
// is skipped, and Main, which every package using redistest calls from its
// TestMain, prints one line counting those skips and why. Under CI=true
// such a skip fails the test instead, so that CI cannot pass on miniredis
// alone.
//
// A test's wait for an event (a page's, a service's, a process's) gives
// up at Deadline, the test binary's own, not at a time of its own that a
// busy machine could reach.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
)

// Backend is one Redis a test runs against.
type Backend struct {
	// Name is "miniredis" or "redis-server".
	Name string
	// Client is connected to the backend and closed when the test ends.
	Client *redis.Client
	// Mini is the embedded server, nil for a real one.
	Mini *miniredis.Miniredis
	// Server is the real server, nil for miniredis.
	Server *redisserver.Server
}

// Real reports whether the backend is a real redis-server.
func (b *Backend) Real() bool { return b.Server != nil }

// Expire makes key expire now: miniredis's clock is moved past the key's
// TTL, a real server is told to expire it. It stands in for "the TTL ran
// out" without a timed sleep.
func (b *Backend) Expire(tb testing.TB, key string) {
	tb.Helper()
	if b.Mini != nil {
		ttl := b.Mini.TTL(key)
		if ttl <= 0 {
			ttl = time.Millisecond
		}
		b.Mini.FastForward(ttl + time.Millisecond)
		return
	}
	if err := b.Client.PExpire(context.Background(), key, time.Millisecond).Err(); err != nil {
		tb.Fatalf("expire %s: %v", key, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for b.Client.Exists(context.Background(), key).Val() == 1 {
		if time.Now().After(deadline) {
			tb.Fatalf("key %s did not expire", key)
		}
		time.Sleep(time.Millisecond)
	}
}

// Addr is the backend's host:port.
func (b *Backend) Addr() string {
	if b.Mini != nil {
		return b.Mini.Addr()
	}
	return b.Server.Addr()
}

// NewClient returns another client of the backend, closed when the test
// ends; on miniredis it carries redisconn.MiniWatchHook.
func (b *Backend) NewClient(tb testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: b.Addr()})
	if b.Mini != nil {
		c.AddHook(redisconn.MiniWatchHook{})
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// Mini starts an embedded miniredis for the test.
func Mini(tb testing.TB) *Backend {
	tb.Helper()
	checkMain(tb)
	m := miniredis.RunT(tb)
	b := &Backend{Name: "miniredis", Mini: m}
	b.Client = b.NewClient(tb)
	return b
}

// Real starts a private redis-server for the test, or skips the test (see
// Skip) when no redis-server binary exists. Extra args go to redis-server,
// after "--hz 100", which makes the server's Stop at the test's end quick.
func Real(tb testing.TB, args ...string) *Backend {
	tb.Helper()
	checkMain(tb)
	// hz 100: redis-server acts on SIGTERM in its cron, every 1/hz s, so
	// at the default 10 each test's Stop waited up to 100 ms.
	srv, err := redisserver.Start(context.Background(), redisserver.Options{Args: append([]string{"--hz", "100"}, args...)})
	if errors.Is(err, redisserver.ErrNoBinary) {
		Skip(tb, NeedServer, reasonNoServer)
	}
	if err != nil {
		tb.Fatalf("start redis-server: %v", err)
	}
	tb.Cleanup(srv.Stop)
	b := &Backend{Name: "redis-server", Server: srv}
	b.Client = b.NewClient(tb)
	return b
}

// Run runs fn as two subtests, one on miniredis and one on a private
// redis-server (skipped, see Skip, when there is no redis-server binary).
// Each subtest gets a fresh, empty backend.
func Run(t *testing.T, fn func(t *testing.T, b *Backend)) {
	t.Helper()
	run(t, false, fn)
}

// RunParallel is Run with the two subtests side by side (t.Parallel), for
// a test whose runs mostly wait: each has its own server, so they cannot
// disturb each other.
func RunParallel(t *testing.T, fn func(t *testing.T, b *Backend)) {
	t.Helper()
	run(t, true, fn)
}

func run(t *testing.T, parallel bool, fn func(t *testing.T, b *Backend)) {
	t.Helper()
	for _, backend := range []struct {
		name  string
		start func(testing.TB, ...string) *Backend
	}{
		{"miniredis", func(tb testing.TB, _ ...string) *Backend { return Mini(tb) }},
		{"redis-server", Real},
	} {
		t.Run(backend.name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			fn(t, backend.start(t))
		})
	}
}

// Cluster starts a local Redis Cluster of masters nodes for the test and
// returns a cluster client, or skips the test (see Skip) under -short or
// when redis-server or redis-cli is missing.
func Cluster(tb testing.TB, masters int) (*redis.ClusterClient, *redisserver.Cluster) {
	tb.Helper()
	checkMain(tb)
	requireCluster(tb)
	cl, err := redisserver.StartCluster(context.Background(), masters)
	if err != nil {
		tb.Fatalf("start cluster: %v", err)
	}
	tb.Cleanup(cl.Stop)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	tb.Cleanup(func() { c.Close() })
	return c, cl
}

// Snapshot renders every key of the database as its type and value, so
// that a test can check that an operation changed nothing.
func Snapshot(tb testing.TB, rdb redis.UniversalClient) map[string]string {
	tb.Helper()
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		typ := rdb.Type(ctx, k).Val()
		var v any
		switch typ {
		case "string":
			v = rdb.Get(ctx, k).Val()
		case "hash":
			v = rdb.HGetAll(ctx, k).Val()
		case "set":
			s := rdb.SMembers(ctx, k).Val()
			slices.Sort(s)
			v = s
		case "zset":
			v = rdb.ZRangeWithScores(ctx, k, 0, -1).Val()
		case "stream":
			v = rdb.XRange(ctx, k, "-", "+").Val()
		default:
			tb.Fatalf("key %s has unexpected type %s", k, typ)
		}
		out[k] = fmt.Sprintf("%s %v", typ, v)
	}
	return out
}

// Embedded starts an in-process miniredis and returns a client of it and a
// function that closes both: the Redis of the Example functions, whose
// output must not depend on a server being installed.
func Embedded() (*redis.Client, func()) {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { rdb.Close(); mr.Close() }
}
