package market

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/watchtx"
)

// runWatch is the Watch strategy (book 4.4): WATCH keys and read; check;
// then MULTI, the writes, EXEC; and start again on the same connection
// when EXEC is aborted because a watched key changed. An uncontended
// operation costs two round trips in the lean form (the WATCH travels with
// the reads), and in the book form one for the WATCH, one per read and one
// for MULTI...EXEC: three for a listing, four for a purchase.
func (m *Market) runWatch(ctx context.Context, s Strategy, name string, o op, cost *Cost, keys ...string) error {
	var err error
	cost.Retries, err = watchtx.RunPiped(ctx, m.rdb, watchtx.Options{}, keys[0], func(tx *redis.Tx) error {
		var w watchTimes
		if err := m.watchAndRead(ctx, tx, keys, false, readSteps(ctx, o), &w); err != nil {
			return err
		}
		if err := o.check(); err != nil {
			return err
		}
		beforeCommit(ctx, s, name)
		execSent := time.Now()
		cmds, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			o.write(ctx, p)
			return nil
		})
		if err == nil || errors.Is(err, redis.TxFailedErr) {
			traceExec(ctx, w.window(execSent, time.Now()))
		}
		return sent(execErr(cmds, err))
	})
	return contended(ctx, cost.Retries, err)
}
