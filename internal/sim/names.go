package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// ErrNoSpread is returned by SpreadNames when it cannot find names whose
// hash tags land on the masters in turn.
var ErrNoSpread = errors.New("sim: cannot spread market names over the cluster's masters")

// SpreadNames returns n market names base-0, base-1, ... On a cluster it
// skips names so that the markets' hash tags land on the masters in turn
// (market i on master i mod masters), which spreads the load evenly; on
// a single server it returns the plain sequence.
func SpreadNames(ctx context.Context, c redis.UniversalClient, base string, n int) ([]string, error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok || n <= 1 {
		out := make([]string, n)
		for i := range out {
			out[i] = base + "-" + strconv.Itoa(i)
		}
		if n == 1 {
			out[0] = base
		}
		return out, nil
	}
	ranges, err := masterRanges(ctx, cc)
	if err != nil {
		return nil, err
	}
	var order []string // masters in the order of their first slot range
	owner := func(slot int64) string {
		for _, r := range ranges {
			if r.start <= slot && slot <= r.end {
				return r.master
			}
		}
		return ""
	}
	for _, r := range ranges {
		if !slices.Contains(order, r.master) {
			order = append(order, r.master)
		}
	}
	if len(order) == 0 {
		return nil, ErrNoSpread
	}
	var out []string
	for cand := 0; len(out) < n; cand++ {
		if cand > 100*n+1000 {
			return nil, ErrNoSpread
		}
		name := base + "-" + strconv.Itoa(cand)
		slot, err := cc.ClusterKeySlot(ctx, "{"+name+"}").Result()
		if err != nil {
			return nil, fmt.Errorf("cluster keyslot: %w", err)
		}
		if owner(slot) == order[len(out)%len(order)] {
			out = append(out, name)
		}
	}
	return out, nil
}

// slotRange is a range of hash slots and the address of the master that
// serves it.
type slotRange struct {
	start, end int64
	master     string
}

// masterRanges returns every slot range of the cluster with its master,
// in the order of the slots.
func masterRanges(ctx context.Context, cc *redis.ClusterClient) ([]slotRange, error) {
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("cluster shards: %w", err)
	}
	var out []slotRange
	for _, sh := range shards {
		i := slices.IndexFunc(sh.Nodes, func(n redis.Node) bool { return n.Role == "master" })
		if i < 0 {
			continue
		}
		n := sh.Nodes[i]
		host := n.Endpoint
		if host == "" || host == "?" { // no preferred endpoint announced
			host = n.IP
		}
		addr := net.JoinHostPort(host, strconv.FormatInt(n.Port, 10))
		for _, r := range sh.Slots {
			out = append(out, slotRange{start: r.Start, end: r.End, master: addr})
		}
	}
	slices.SortFunc(out, func(a, b slotRange) int { return cmp.Compare(a.start, b.start) })
	return out, nil
}
