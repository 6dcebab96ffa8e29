package sched

// The explorer from start to end for one target: make it, search,
// close it.

import (
	"context"
	"slices"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/redis/go-redis/v9"
)

// CheckTarget explores t on the Redis rdb talks to: every schedule of its
// clients within o.Model's bounds (nil: DefaultModel, with t.Clients
// clients), or as o says otherwise (its mode, its workers). The result
// holds the shortest counterexample found of each property broken; none
// means the bounds were searched through without finding one when
// Result.Exhaustive is true.
func CheckTarget(
	ctx context.Context, rdb *redis.Client, t *Target, o Options,
) (*result.Result, error) {
	m := action.DefaultModel()
	if o.Model != nil {
		m = *o.Model
	}
	m.FaultKinds = slices.Clone(m.FaultKinds)
	e, err := NewExplorer(ctx, rdb, t, m)
	if err != nil {
		return nil, err
	}
	res, err := e.Explore(ctx, o)
	if cerr := e.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return res, err
}
