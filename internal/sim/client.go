package sim

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// DeleteMarket deletes every key of market name ("{name}:*") with SCAN
// and UNLINK; on a cluster it scans every master.
func DeleteMarket(ctx context.Context, c redis.UniversalClient, name string) error {
	pattern := "{" + name + "}:*"
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return deleteMatching(ctx, node, pattern)
		})
	}
	return deleteMatching(ctx, c, pattern)
}

func deleteMatching(ctx context.Context, c redis.Cmdable, pattern string) error {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return fmt.Errorf("scan %s: %w", pattern, err)
		}
		if len(keys) > 0 {
			if err := c.Unlink(ctx, keys...).Err(); err != nil {
				return fmt.Errorf("unlink: %w", err)
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
