package locking_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
)

// TestReleaseThroughLoading: a lock whose release Redis did not run (it
// was down, or refused it with LOADING while it read its data again after
// a restart) is released by the holder's client as soon as loading ends,
// not kept until its lease ends. The server is made to load for seconds
// with few keys: a delay per key (key-load-delay, in microseconds) and an
// answer to clients between every KiB read
// (loading-process-events-interval-bytes).
//
// The test does not time the release. It checks that the background
// release met LOADING, then released the lock with the first attempt that
// Redis ran: attempts are at most lostBackoff.Max (100 ms) apart, so the
// lock goes within that of loading's end. It logs the measured times
// (go test -run TestReleaseThroughLoading -v); results/loading has them.
func TestReleaseThroughLoading(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // seconds of loading: the full run has it
	for _, when := range []struct {
		name string
		// down: the release is sent while Redis is down; otherwise once it
		// is back and still loading.
		down bool
	}{
		{"sent while down", true},
		{"sent while loading", false},
	} {
		t.Run(when.name, func(t *testing.T) {
			t.Parallel()
			const keys, perKey = 2000, "1000" // about 2 s of loading
			b := redistest.Real(t, "--appendonly", "yes", "--appendfsync", "always",
				"--key-load-delay", perKey, "--loading-process-events-interval-bytes", "1024")
			ctx := context.Background()
			must(t, b.Client.Do(ctx, "DEBUG", "POPULATE", keys, "{fill}:").Err())
			// The keys go into the append-only file's snapshot base,
			// whose loading the delay slows; the lock goes into the file's
			// tail, read after it.
			must(t, b.Client.BgRewriteAOF(ctx).Err())
			awaitRewrite(t, b.Client)

			// A lease far longer than the loading, even on a loaded
			// machine: only a release can free the lock before the test
			// ends.
			const key, lease = "{loading}:lock", time.Minute
			replies := &releaseReplies{}
			c := redis.NewClient(&redis.Options{Addr: b.Addr(), MaxRetries: -1})
			c.AddHook(replies)
			t.Cleanup(func() { c.Close() })
			m := locking.NewMutex(c, key, lease)
			l, err := m.TryAcquire(ctx)
			must(t, err)

			b.Server.Kill()
			if when.down {
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				err = l.Release(rctx)
				cancel()
				if err == nil {
					t.Fatal("a release with Redis down succeeded")
				}
			}
			must(t, b.Server.RestartLoading(ctx))
			restarted := time.Now()
			if !when.down {
				err = l.Release(ctx)
				var reply redis.Error
				if !errors.As(err, &reply) || !strings.HasPrefix(reply.Error(), "LOADING") {
					t.Fatalf("a release while Redis loads: %v, want a LOADING error reply", err)
				}
			}
			// Watch from another client: when loading ends, when the lock
			// goes (its release, or at worst its lease).
			w := redis.NewClient(&redis.Options{Addr: b.Addr(), MaxRetries: -1})
			t.Cleanup(func() { w.Close() })
			loaded, gone := watchLoading(t, w, key, restarted, lease+5*time.Second)
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			must(t, m.Settle(sctx))

			t.Logf("release %s: restart -> loading ended %v, lock gone %v (%v after loading); lease %v; %s",
				when.name, loaded.Round(time.Millisecond), gone.Round(time.Millisecond),
				(gone - loaded).Round(time.Millisecond), lease, replies)
			loading, released, other := replies.since()
			if released != 1 || other != nil {
				t.Fatalf("after the restart the release was answered %s: want LOADING, then one release "+
					"(the lock went at %v, its lease was %v)", replies, gone.Round(time.Millisecond), lease)
			}
			if loading == 0 {
				t.Fatalf("no release met LOADING (%s): loading ended before any attempt; the path was not exercised", replies)
			}
		})
	}
}

// awaitRewrite waits until the server's append-only rewrite has ended,
// and checks that it succeeded.
func awaitRewrite(t *testing.T, c *redis.Client) {
	t.Helper()
	ctx := context.Background()
	for n := 0; ; n++ {
		info, err := c.InfoMap(ctx, "persistence").Result()
		must(t, err)
		p := info["Persistence"]
		if p["aof_rewrite_in_progress"] == "0" && p["aof_rewrite_scheduled"] == "0" {
			if p["aof_last_bgrewrite_status"] != "ok" {
				t.Fatalf("append-only rewrite: %s", p["aof_last_bgrewrite_status"])
			}
			return
		}
		if n == 2000 {
			t.Fatal("the append-only rewrite did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// watchLoading polls the server every 5 ms until key is gone or limit has
// passed since start, and returns how long after start the server ended
// loading and the key was gone.
func watchLoading(t *testing.T, c *redis.Client, key string, start time.Time, limit time.Duration) (loaded, gone time.Duration) {
	t.Helper()
	ctx := context.Background()
	for time.Since(start) < limit {
		if loaded == 0 {
			if info, err := c.InfoMap(ctx, "persistence").Result(); err == nil && info["Persistence"]["loading"] == "0" {
				loaded = time.Since(start)
			}
		}
		if n, err := c.Exists(ctx, key).Result(); err == nil && n == 0 {
			gone = time.Since(start)
			if loaded == 0 {
				loaded = gone
			}
			return loaded, gone
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s still held %v after the restart", key, limit)
	return 0, 0
}

// releaseReplies is a client hook that records the replies to release
// scripts (EVALSHA, EVAL): "LOADING", "released" (1), "not held" (0), or
// another error.
type releaseReplies struct {
	mu   sync.Mutex
	seen []string
}

func (*releaseReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *releaseReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); name != "evalsha" && name != "eval" {
			return err
		}
		var reply redis.Error
		var what string
		switch {
		case errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "NOSCRIPT"):
			return err // EVAL follows
		case errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "LOADING"):
			what = "LOADING"
		case err != nil:
			what = err.Error()
		case cmd.(*redis.Cmd).Val() == int64(1):
			what = "released"
		default:
			what = "not held"
		}
		r.mu.Lock()
		r.seen = append(r.seen, what)
		r.mu.Unlock()
		return err
	}
}

func (*releaseReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// since counts the replies from the first LOADING (or the first reply
// from a running server) on: how many were LOADING, how many released
// the lock, and the first other one, if any. The acquisition's script
// (none for a plain Mutex) and the failed sends before the restart are
// not counted.
func (r *releaseReplies) since() (loading, released int, other []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counting := false
	for _, s := range r.seen {
		switch {
		case s == "LOADING":
			counting = true
			loading++
		case s == "released":
			counting = true
			released++
		case counting:
			other = append(other, s)
		}
	}
	return loading, released, other
}

func (r *releaseReplies) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		return "no release replies"
	}
	var b strings.Builder
	last, n := "", 0
	flush := func() {
		if n > 0 {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(last)
			if n > 1 {
				fmt.Fprintf(&b, " ×%d", n)
			}
		}
	}
	for _, s := range r.seen {
		if s != last {
			flush()
			last, n = s, 0
		}
		n++
	}
	flush()
	return "release replies: " + b.String()
}
