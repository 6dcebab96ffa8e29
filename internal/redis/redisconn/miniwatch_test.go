package redisconn_test

import (
	"context"
	"errors"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
)

// commitsAfterZRem reports whether a transaction WATCHing a sorted set
// commits although another client removed one of its members meanwhile.
func commitsAfterZRem(t *testing.T, hook bool) bool {
	t.Helper()
	ctx := context.Background()
	m := miniredis.RunT(t)
	a := redis.NewClient(&redis.Options{Addr: m.Addr()})
	b := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer a.Close()
	defer b.Close()
	if hook {
		a.AddHook(redisconn.MiniWatchHook{})
		b.AddHook(redisconn.MiniWatchHook{})
	}
	a.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "x"}, redis.Z{Score: 2, Member: "y"})
	err := a.Watch(ctx, func(tx *redis.Tx) error {
		// b removes a member, in a transaction as the market does.
		if _, err := b.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.ZRem(ctx, "z", "x")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "committed", "1", 0)
			return nil
		})
		return err
	}, "z")
	if err != nil && !errors.Is(err, redis.TxFailedErr) {
		t.Fatal(err)
	}
	if ttl := m.TTL("z"); ttl != 0 {
		t.Fatalf("the hook left a TTL of %v on z", ttl)
	}
	return err == nil
}

func TestHookMakesZRemInvalidateWatch(t *testing.T) {
	if !commitsAfterZRem(t, false) {
		t.Log("miniredis now invalidates WATCH on ZREM by itself: the hook may be retired")
	}
	if commitsAfterZRem(t, true) {
		t.Fatal("with the hook, a WATCH survived a ZREM of its key")
	}
}
