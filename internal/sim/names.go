package sim

import (
	"context"
	"errors"
	"fmt"
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
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("cluster slots: %w", err)
	}
	var order []string // masters in the order of their first slot range
	owner := func(slot int64) string {
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
				return s.Nodes[0].Addr
			}
		}
		return ""
	}
	for _, s := range slots {
		if len(s.Nodes) > 0 && !contains(order, s.Nodes[0].Addr) {
			order = append(order, s.Nodes[0].Addr)
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
