package market

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/faultpoint"
	"github.com/lockmarket/lockmarket/watchtx"
)

// runWatch is the Watch strategy (book 4.4): WATCH keys and read, in one
// round trip; check; then MULTI, the writes, EXEC; and start again on the
// same connection when EXEC is aborted because a watched key changed. An
// uncontended operation costs two round trips.
func (m *Market) runWatch(ctx context.Context, s Strategy, name string, o op, cost *Cost, keys ...string) error {
	var err error
	cost.Retries, err = watchtx.RunPiped(ctx, m.rdb, watchtx.Options{}, keys[0], func(tx *redis.Tx) error {
		_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			watchtx.Watch(ctx, p, keys...)
			o.read(ctx, p)
			return nil
		})
		if err := pipelinedErr(err); err != nil {
			return err
		}
		if err := o.check(); err != nil {
			return err
		}
		faultpoint.BeforeCommit(ctx, string(s), name)
		cmds, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			o.write(ctx, p)
			return nil
		})
		return execErr(cmds, err)
	})
	return contended(ctx, cost.Retries, err)
}
