package locking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var releasePublishScript = redis.NewScript(`
-- KEYS: lock; ARGV: token, channel
if redis.call("get", KEYS[1]) == ARGV[1] then
	redis.call("del", KEYS[1])
	redis.call("publish", ARGV[2], "released")
	return 1
end
return 0`)

// acquireWoken is Acquire for a mutex made WithWakeups: after a failed
// attempt it subscribes to the lock's channel and then tries again each
// time a release is announced or the backoff interval passes, whichever
// comes first. Subscribing before the second attempt means a release that
// happens between the attempt and the wait is not missed.
func (m *Mutex) acquireWoken(ctx context.Context) (*Lock, error) {
	l, err := m.TryAcquire(ctx)
	if err == nil {
		return l, nil
	}
	if !errors.Is(err, ErrNotAcquired) {
		return nil, endedWhileWaiting(ctx, err)
	}
	ps := m.rdb.Subscribe(ctx, WakeupChannel(m.key))
	defer ps.Close()
	var wake <-chan *redis.Message
	if _, err := ps.Receive(ctx); err == nil {
		wake = ps.Channel()
	} // otherwise wake stays nil: plain backoff.
	for n := 1; ; n++ {
		l, err := m.TryAcquire(ctx)
		if err == nil {
			l.Waits = n
			return l, nil
		}
		if !errors.Is(err, ErrNotAcquired) {
			return nil, endedWhileWaiting(ctx, err)
		}
		t := time.NewTimer(m.backoff.Delay(n - 1))
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: %s after %d attempts: %w", ErrNotAcquired, m.key, n+1, ctx.Err())
		}
		t.Stop()
	}
}
