package sched

import (
	"context"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/redis/go-redis/v9"
)

// TestPrepareOnceRestores checks that a target set up once finds, at the
// start of every schedule, the keys its Prepare wrote, as it wrote them
// (values, types, leases), and none a schedule wrote besides; and that
// Prepare ran once.
func TestPrepareOnceRestores(t *testing.T) {
	srv := redistest.Real(t)
	ctx := context.Background()
	prepares := 0
	tg := &Target{
		Name: "prepared", Clients: 2,
		Workload: Workload{PrepareOnce: true, Prepare: func(
			ctx context.Context, rdb redis.UniversalClient, ns string,
		) error {
			prepares++
			p := rdb.TxPipeline()
			p.Set(ctx, ns+"plain", "v\x00\xff", 0)
			p.Set(ctx, ns+"leased", "l", time.Hour)
			p.HSet(ctx, ns+"hash", "f", "1", "g", "2")
			p.RPush(ctx, ns+"list", "a", "b")
			_, err := p.Exec(ctx)
			return err
		},
			Run: func(context.Context, *Client) error { return nil },
			End: func(context.Context, *Explorer, Snapshot) ([]result.Violation, error) { return nil, nil },
		},
	}
	e, err := NewExplorer(ctx, srv.Client, tg, action.DefaultModel())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ns := e.KeyPrefix
	for run := range 3 {
		if run > 0 {
			// What a schedule leaves: a change, a deletion, a new key.
			srv.Client.Set(ctx, ns+"plain", "changed", 0)
			srv.Client.Del(ctx, ns+"list")
			srv.Client.Set(ctx, ns+"new", "x", 0)
			if err := e.reset(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if v := srv.Client.Get(ctx, ns+"plain").Val(); v != "v\x00\xff" {
			t.Errorf("run %d: plain = %q", run, v)
		}
		if ttl := srv.Client.PTTL(ctx, ns+"leased").Val(); ttl < 59*time.Minute {
			t.Errorf("run %d: leased has %v left, want about an hour", run, ttl)
		}
		if ttl := srv.Client.PTTL(ctx, ns+"plain").Val(); ttl != -1 {
			t.Errorf("run %d: plain has a lease (%v)", run, ttl)
		}
		if h := srv.Client.HGetAll(ctx, ns+"hash").Val(); h["f"] != "1" || h["g"] != "2" {
			t.Errorf("run %d: hash = %v", run, h)
		}
		if l := srv.Client.LRange(ctx, ns+"list", 0, -1).Val(); len(l) != 2 || l[1] != "b" {
			t.Errorf("run %d: list = %v", run, l)
		}
		if n := srv.Client.Exists(ctx, ns+"new").Val(); n != 0 {
			t.Errorf("run %d: a schedule's key outlived the reset", run)
		}
	}
	if prepares != 1 {
		t.Errorf("Prepare ran %d times, want 1", prepares)
	}
}
