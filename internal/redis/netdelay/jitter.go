package netdelay

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// ErrNegativeJitter is returned for a jitter below zero.
var ErrNegativeJitter = errors.New("netdelay: negative jitter")

// maxJitterFactor caps one jitter draw at this many times its mean, so a
// single unlucky draw cannot stall a connection (an exponential draw
// exceeds 20 times its mean with probability e^-20, about 2 in 10^9).
const maxJitterFactor = 20

// Config is a Proxy's delay model. Each chunk the upstream sends is
// delivered
//
//	max(arrival + RTT + X, previous chunk's delivery)
//
// where X is drawn afresh for every chunk from an exponential distribution
// of mean Jitter (X = 0 when Jitter is 0), capped at 20 times the mean.
// The max keeps every connection's bytes in order, as TCP does: a chunk
// drawn early waits for the one before it (head-of-line blocking), so the
// added delays of one connection never reorder its replies. The draws of
// each connection come from their own generator, seeded from Seed and the
// connection's number (0 for the first connection the proxy accepted, 1
// for the next, ...), so a given seed replays the same sequence of draws
// per connection.
//
// The exponential is the textbook model of queueing delay on a path: most
// round trips are near the base, a few much longer. Its point here is to
// keep workers that exchange the same command sequences behind the same
// fixed delay from falling into step (see results/book-profile).
type Config struct {
	// RTT is the fixed part of the delay added to each round trip.
	RTT time.Duration
	// Jitter is the mean of the random part; 0 for none.
	Jitter time.Duration
	// Seed seeds the random part.
	Seed uint64
}

// check reports a delay model that cannot be used.
func (c Config) check() error {
	if c.RTT < 0 {
		return fmt.Errorf("%w: %v", ErrNegativeRTT, c.RTT)
	}
	if c.Jitter < 0 {
		return fmt.Errorf("%w: %v", ErrNegativeJitter, c.Jitter)
	}
	return nil
}

// delayed reports whether the model adds any delay.
func (c Config) delayed() bool { return c.RTT > 0 || c.Jitter > 0 }

// String is the model as flags would give it, e.g. "1ms" or
// "1ms + exp(mean 500µs)".
func (c Config) String() string {
	if c.Jitter == 0 {
		return c.RTT.String()
	}
	return fmt.Sprintf("%v + exp(mean %v)", c.RTT, c.Jitter)
}

// Sampler draws the delays of one connection under a Config, in order.
// It is not safe for concurrent use.
type Sampler struct {
	cfg  Config
	rng  *rand.Rand
	last time.Time
}

// NewSampler returns the sampler of connection number conn under cfg.
func NewSampler(cfg Config, conn uint64) *Sampler {
	s := &Sampler{cfg: cfg}
	if cfg.Jitter > 0 {
		s.rng = rand.New(rand.NewPCG(cfg.Seed, conn^0x9e3779b97f4a7c15))
	}
	return s
}

// Extra draws the random part of the next chunk's delay: 0 without jitter.
func (s *Sampler) Extra() time.Duration {
	if s.rng == nil {
		return 0
	}
	x := s.rng.ExpFloat64()
	x = math.Min(x, maxJitterFactor)
	return time.Duration(x * float64(s.cfg.Jitter))
}

// Due is when a chunk that arrived at arrival is to be delivered: the
// fixed delay plus a fresh draw of the random part, and never before the
// chunk due before it.
func (s *Sampler) Due(arrival time.Time) time.Time {
	due := arrival.Add(s.cfg.RTT + s.Extra())
	if due.Before(s.last) {
		due = s.last
	}
	s.last = due
	return due
}
