package targets

import (
	"context"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/sched"
)

// probeTime is the virtual time the liveness probe runs a waiter's take
// at: the schedule's end (snap.Now) plus the longest lease left, a client's
// (the longest lease any client asks for) or a key's (the longest time to
// live left among volatile, the keys with an expiry, which the probe
// deletes), plus one retry wait. By then every lease a client was granted
// has run out on the clients' clock as on the server: a lock that keeps
// its leases as timestamps of the clients' clock (${now_ms}) in a key
// without expiry sees them run out as the probe deletes the server's.
func probeTime(
	ctx context.Context, e *sched.Explorer, snap sched.Snapshot, volatile []string,
) (time.Duration, error) {
	m := e.Model()
	longest := m.TTL
	for i := range m.Clients {
		longest = max(longest, m.LeaseOf(i))
	}
	for _, k := range volatile {
		left, err := e.Redis.PTTL(ctx, k).Result()
		if err != nil {
			return 0, err
		}
		longest = max(longest, snap.Undilate(left))
	}
	return snap.Now + longest + m.Retry, nil
}
