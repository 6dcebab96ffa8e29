package market_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// TestStrategiesOnCluster runs every strategy in both client forms on a
// local three-master Redis Cluster, with markets whose hash tags land on
// different masters.
func TestStrategiesOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c, _ := redistest.Cluster(t, 3)

	// Pick market names that land on all three masters.
	want := len(market.Strategies) * len(markettrace.ClientForms)
	owners := map[string]string{}
	var names []string
	for i := 0; len(names) < want && i < 1000; i++ {
		name := fmt.Sprintf("shard%d", i)
		addr := masterOf(t, c, markettrace.NewKeys(name).Market())
		if len(owners) < 3 && owners[addr] != "" {
			continue
		}
		if owners[addr] == "" {
			owners[addr] = name
		}
		names = append(names, name)
	}
	if len(owners) != 3 {
		t.Fatalf("markets landed on %d masters, want 3", len(owners))
	}

	i := 0
	for _, f := range markettrace.ClientForms {
		for _, s := range market.Strategies {
			name := names[i]
			i++
			t.Run(string(f)+"/"+string(s), func(t *testing.T) { clusterRace(t, c, name, f, s) })
		}
	}
}

// clusterRace lists one item on market name and lets 20 buyers race for
// it: exactly one wins.
func clusterRace(t *testing.T, c *redis.ClusterClient, name string, f markettrace.ClientForm, s market.Strategy) {
	ctx := context.Background()
	m, err := newMarket(c, name, markettrace.WithClient(f))
	must(t, err)
	if _, err := m.CreateUser(ctx, "seller", "seller", 0); err != nil {
		t.Fatal(err)
	}
	must(t, m.GrantItem(ctx, "seller", "gem"))
	if _, err := m.List(ctx, s, "seller", "gem", 10); err != nil {
		t.Fatal(err)
	}
	var wins atomic.Int64
	var wg sync.WaitGroup
	for b := range 20 {
		buyer := fmt.Sprintf("b%d", b)
		if _, err := m.CreateUser(ctx, buyer, buyer, 100); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			_, err := m.Purchase(ctx, s, buyer, "seller", "gem", 10)
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, market.ErrListingNotFound) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d purchases succeeded, want 1", wins.Load())
	}
	audit(t, m)
}

// masterOf returns the address of the master that serves key.
func masterOf(t *testing.T, c *redis.ClusterClient, key string) string {
	t.Helper()
	ctx := context.Background()
	slot, err := c.ClusterKeySlot(ctx, key).Result()
	must(t, err)
	shards, err := c.ClusterShards(ctx).Result()
	must(t, err)
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if r.Start > slot || slot > r.End {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role == "master" {
					return net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
				}
			}
		}
	}
	t.Fatalf("no master serves slot %d", slot)
	return ""
}
