package netdelay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/report/latency"
)

// ErrNoSamples is returned by MeasureRTT when asked for fewer than one PING.
var ErrNoSamples = errors.New("netdelay: at least one sample is needed")

// Pinger is what MeasureRTT needs of a client; every go-redis client
// (redis.UniversalClient) is one.
type Pinger interface {
	Ping(ctx context.Context) *redis.StatusCmd
}

// MeasureRTT sends one PING to open a connection, then n more one after
// the other, and returns the median of their round trips as the client
// sees them (the ⌈n/2⌉-th shortest, within latency.Histogram's precision).
// Through a Proxy it is the round trip a run should report: the delay
// asked for plus what the timer, the proxy's hops and the server add.
func MeasureRTT(ctx context.Context, c Pinger, n int) (time.Duration, error) {
	if n < 1 {
		return 0, fmt.Errorf("%w: %d", ErrNoSamples, n)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		return 0, fmt.Errorf("netdelay: ping: %w", err)
	}
	var trips latency.Histogram
	for range n {
		start := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			return 0, fmt.Errorf("netdelay: ping: %w", err)
		}
		trips.Record(time.Since(start))
	}
	return trips.Quantile(0.5), nil
}
