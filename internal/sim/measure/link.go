// Package measure runs the simulator's measurements: the cells of a run
// (each scenario under each strategy, in slices taken in turn) and of a
// sweep of the round trip, one at a time with their progress on stderr,
// through a link to Redis that may add a round trip; with the presets of
// its flags (profiles) and the bounds of what one cell may ask of the
// machine.
package measure

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/netdelay"
	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// MaxRTT bounds -rtt: beyond a second per round trip a cell measures
// nothing but the delay.
const MaxRTT = time.Second

// rttSamples is how many PINGs measure a link's round trip.
const rttSamples = 200

// ClientOptions are the market's options for the client form on client
// (the book's lock for the book form, say).
type ClientOptions func(client redis.UniversalClient, form markettrace.ClientForm) []market.Option

// Link is the path from the simulator's clients to Redis: straight to the
// server(s), or through netdelay proxies in this process that add a round
// trip. Every client of a cell is made from client (its options, the
// dialer included, are copied), so every strategy's commands, lock
// holders' included, pay the same delay.
type Link struct {
	client redis.UniversalClient
	dialer *netdelay.Dialer
	// hooks are what every client of a cell needs on this server
	// (miniredis's WATCH fix).
	hooks []redis.Hook
	// delay is the delay model asked for (-rtt, -jitter); measured the
	// PING p50 through the link.
	delay    netdelay.Config
	measured time.Duration
	options  ClientOptions
}

// OpenLink makes the link to conn's server(s) delayed under delay (no
// delay: straight), whose markets take options, and measures its round
// trip.
func OpenLink(ctx context.Context, conn *redisconn.Conn, delay netdelay.Config, options ClientOptions) (*Link, error) {
	l := &Link{client: conn.Client, delay: delay, options: options}
	if conn.Mode == redisconn.ModeMiniredis {
		l.hooks = append(l.hooks, redisconn.MiniWatchHook{})
	}
	if delay.RTT > 0 || delay.Jitter > 0 {
		d, err := netdelay.NewDialerConfig(delay)
		if err != nil {
			return nil, err
		}
		dc := redisconn.SizedClientDialing(conn.Client, 0, d.Dial, l.hooks...)
		if dc == conn.Client {
			d.Close()
			return nil, fmt.Errorf("-rtt: cannot route a %T through the delay proxy", conn.Client)
		}
		l.client, l.dialer = dc, d
	}
	if err := l.measure(ctx); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// measure sets measured to the PING p50 through the link now.
func (l *Link) measure(ctx context.Context) error {
	d, err := netdelay.MeasureRTT(ctx, l.client, rttSamples)
	if err != nil {
		return fmt.Errorf("measure the round trip: %w", err)
	}
	l.measured = d
	return nil
}

// Close closes what OpenLink opened (not conn's client).
func (l *Link) Close() {
	if l.dialer != nil {
		l.client.Close()
		l.dialer.Close()
	}
}

// RunCell runs one cell of the simulator through l, on a client of its
// own sized for the cell's workers, its markets in client form.
func (l *Link) RunCell(ctx context.Context, form markettrace.ClientForm, cfg sim.Config) (sim.Result, error) {
	workers := max(cfg.Markets, 1) * (cfg.Scenario.Listers + cfg.Scenario.Buyers)
	client := redisconn.SizedClient(l.client, workers+4, l.hooks...)
	if client != l.client {
		defer client.Close()
	}
	cfg.Client, cfg.MarketOptions = client, l.options(client, form)
	return sim.Run(ctx, cfg)
}

// Measured is the round trip last measured through l (PING p50).
func (l *Link) Measured() time.Duration { return l.measured }
