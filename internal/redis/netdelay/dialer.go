package netdelay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ErrClosed is returned by Dialer.Dial once the Dialer is closed.
var ErrClosed = errors.New("netdelay: dialer closed")

// Dialer makes every connection to a server go through a Proxy of that
// server's own, started on the first dial to its address, so that a
// client of several servers (a Redis Cluster client, which learns the
// nodes' addresses from the cluster) pays the round trip to each of them.
// Its Dial is a go-redis dialer: set it as redis.Options.Dialer or
// redis.ClusterOptions.Dialer. It is safe for concurrent use.
type Dialer struct {
	cfg Config
	d   net.Dialer

	mu      sync.Mutex
	closed  bool
	proxies map[string]*Proxy
}

// NewDialer returns a Dialer whose proxies add rtt to every round trip.
func NewDialer(rtt time.Duration) (*Dialer, error) {
	return NewDialerConfig(Config{RTT: rtt})
}

// NewDialerConfig returns a Dialer whose proxies delay under cfg. The
// proxies' random parts are seeded apart: the first proxy started uses
// cfg.Seed, the next cfg.Seed+1, and so on.
func NewDialerConfig(cfg Config) (*Dialer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &Dialer{cfg: cfg, proxies: map[string]*Proxy{}}, nil
}

// Dial connects to addr through its proxy, starting the proxy if this is
// the first dial to addr. network must be a TCP network.
func (d *Dialer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("netdelay: cannot delay a %s connection", network)
	}
	p, err := d.proxy(ctx, addr)
	if err != nil {
		return nil, err
	}
	return d.d.DialContext(ctx, network, p.Addr())
}

// proxy returns addr's proxy, started if need be.
func (d *Dialer) proxy(ctx context.Context, addr string) (*Proxy, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	if p, ok := d.proxies[addr]; ok {
		return p, nil
	}
	cfg := d.cfg
	cfg.Seed += uint64(len(d.proxies))
	p, err := StartConfig(ctx, addr, cfg)
	if err != nil {
		return nil, err
	}
	d.proxies[addr] = p
	return p, nil
}

// Upstreams is how many servers the Dialer has proxies for.
func (d *Dialer) Upstreams() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.proxies)
}

// Close closes every proxy (and so every connection made by Dial) and
// makes later dials fail with ErrClosed. Calling it again does nothing.
func (d *Dialer) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for _, p := range d.proxies {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
