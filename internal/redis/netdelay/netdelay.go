// Package netdelay is a loopback TCP proxy that adds a fixed latency to
// every round trip between its clients and one upstream server, as a
// network link would: each chunk of bytes the server sends is held for the
// round trip and then delivered, in order, while the next chunks are
// already being read. Pipelined requests therefore pay the latency once,
// not once per command, and throughput is not limited by the delay.
//
// The whole delay is on the way back (replies, and pushes such as pub/sub
// messages); requests pass at once. Every chain of cause and effect between
// clients runs client, server, client, and so crosses the proxy once each
// way: it costs the same whichever way the delay sits, as it would on a
// real link with half of it each way. Holding it on one side wakes one
// timer per round trip instead of two, which costs less CPU.
//
// A chunk is never delivered early. It is delivered late by as much as the
// timer wakes after its time, plus the proxy's own hops: on Linux the timer
// is a timerfd waited for by the Go network poller, which wakes tens of
// microseconds late (a Go timer, used elsewhere, wakes no sooner than about
// a millisecond after it was set, whatever it was set for). So the round
// trip through a Proxy is a little longer than the one asked for, and
// callers should report the round trip they measure (MeasureRTT).
package netdelay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// ErrNegativeRTT is returned by Start for a round trip below zero.
var ErrNegativeRTT = errors.New("netdelay: negative round trip")

// Proxy is a running delay proxy. Its methods are safe for concurrent use.
type Proxy struct {
	upstream string
	cfg      Config
	ln       net.Listener
	dialer   net.Dialer
	// stop cancels the dials to the upstream in flight when Close is called.
	stop    context.CancelFunc
	dialCtx context.Context

	mu     sync.Mutex
	closed bool
	links  map[*link]struct{}
	// conns numbers the accepted connections, for their samplers.
	conns uint64
	wg    sync.WaitGroup
}

// Start listens on a free loopback port and relays every connection made to
// it to upstreamAddr (host:port), adding rtt to each round trip: what the
// upstream sends is delivered rtt after it arrived. A zero rtt relays
// without delay. ctx bounds the start-up, which dials upstreamAddr once to
// check that it answers; the proxy then runs until Close.
func Start(ctx context.Context, upstreamAddr string, rtt time.Duration) (*Proxy, error) {
	return StartConfig(ctx, upstreamAddr, Config{RTT: rtt})
}

// StartConfig is Start with a delay model that may add a random part to
// each delay (see Config).
func StartConfig(ctx context.Context, upstreamAddr string, cfg Config) (*Proxy, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", upstreamAddr)
	if err != nil {
		return nil, fmt.Errorf("netdelay: upstream %s: %w", upstreamAddr, err)
	}
	c.Close()
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("netdelay: listen: %w", err)
	}
	p := &Proxy{
		upstream: upstreamAddr,
		cfg:      cfg,
		ln:       ln,
		links:    map[*link]struct{}{},
	}
	p.dialCtx, p.stop = context.WithCancel(context.Background())
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's loopback host:port, to be dialed instead of the
// upstream.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// RTT is the fixed round trip the proxy was asked to add.
func (p *Proxy) RTT() time.Duration { return p.cfg.RTT }

// Close stops accepting, closes every relayed connection (bytes still held
// for delivery are dropped) and returns once every goroutine of the proxy
// has ended. Calling it again does nothing.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	err := p.ln.Close()
	p.stop()
	for l := range p.links {
		l.shut()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// accept relays each new connection until the listener is closed.
func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.isClosed() {
				return
			}
			// A transient failure (out of descriptors): let it pass.
			time.Sleep(5 * time.Millisecond)
			continue
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// serve dials the upstream for client c and relays both directions until
// both have ended or the link is shut.
func (p *Proxy) serve(c net.Conn) {
	up, err := p.dialer.DialContext(p.dialCtx, "tcp", p.upstream)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	n := p.conns
	p.conns++
	p.mu.Unlock()
	l, err := newLink(c, up, p.cfg, n)
	if err != nil {
		c.Close()
		up.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		l.shut()
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()

	l.run()

	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
}
