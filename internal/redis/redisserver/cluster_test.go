package redisserver_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestStartCluster checks that clusters of one and two masters (joined
// without redis-cli, which needs three) and of three (joined by it) cover
// every hash slot, one share per master, and serve keys of any slot.
func TestStartCluster(t *testing.T) {
	for _, masters := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("%d masters", masters), func(t *testing.T) {
			ctx := context.Background()
			c, cl := redistest.Cluster(t, masters)
			if got := len(cl.Addrs()); got != masters {
				t.Fatalf("%d nodes, want %d", got, masters)
			}
			shards, err := c.ClusterShards(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			var owners []string
			covered := 0
			for _, sh := range shards {
				i := slices.IndexFunc(sh.Nodes, func(n redis.Node) bool { return n.Role == "master" })
				if len(sh.Slots) == 0 {
					continue // a shard that serves no slot
				}
				if i < 0 {
					t.Fatalf("slots %v have no master", sh.Slots)
				}
				for _, s := range sh.Slots {
					covered += int(s.End - s.Start + 1)
				}
				if addr := fmt.Sprintf("%s:%d", sh.Nodes[i].IP, sh.Nodes[i].Port); !slices.Contains(owners, addr) {
					owners = append(owners, addr)
				}
			}
			if covered != 16384 || len(owners) != masters {
				t.Fatalf("%d slots covered by %d masters %v, want 16384 by %d", covered, len(owners), owners, masters)
			}
			for i := range 20 {
				key := fmt.Sprintf("{k%d}:x", i)
				if err := c.Set(ctx, key, i, 0).Err(); err != nil {
					t.Fatalf("set %s: %v", key, err)
				}
				if v, err := c.Get(ctx, key).Int(); err != nil || v != i {
					t.Fatalf("get %s = %d, %v; want %d", key, v, err, i)
				}
			}
		})
	}
}
