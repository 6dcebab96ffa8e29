package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/bookform"
	"github.com/lockmarket/lockmarket/internal/redis/netdelay"
	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// maxRTT bounds -rtt: beyond a second per round trip a cell measures
// nothing but the delay.
const maxRTT = time.Second

// rttSamples is how many PINGs measure a link's round trip.
const rttSamples = 200

// link is the path from the simulator's clients to Redis: straight to the
// server(s), or through netdelay proxies in this process that add a round
// trip. Every client of a cell is made from client (its options, the
// dialer included, are copied), so every strategy's commands, lock
// holders' included, pay the same delay.
type link struct {
	client redis.UniversalClient
	dialer *netdelay.Dialer
	// hooks are what every client of a cell needs on this server
	// (miniredis's WATCH fix).
	hooks []redis.Hook
	// delay is the delay model asked for (-rtt, -jitter); measured the
	// PING p50 through the link.
	delay    netdelay.Config
	measured time.Duration
}

// openLink makes the link to conn's server(s) delayed under delay (no
// delay: straight) and measures its round trip.
func openLink(ctx context.Context, conn *redisconn.Conn, delay netdelay.Config) (*link, error) {
	l := &link{client: conn.Client, delay: delay}
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
func (l *link) measure(ctx context.Context) error {
	d, err := netdelay.MeasureRTT(ctx, l.client, rttSamples)
	if err != nil {
		return fmt.Errorf("measure the round trip: %w", err)
	}
	l.measured = d
	return nil
}

// Close closes what openLink opened (not conn's client).
func (l *link) Close() {
	if l.dialer != nil {
		l.client.Close()
		l.dialer.Close()
	}
}

// runCell runs one cell of the simulator through l, on a client of its
// own sized for the cell's workers, its markets in client form.
func (l *link) runCell(ctx context.Context, form markettrace.ClientForm, cfg sim.Config) (sim.Result, error) {
	workers := max(cfg.Markets, 1) * (cfg.Scenario.Listers + cfg.Scenario.Buyers)
	client := redisconn.SizedClient(l.client, workers+4, l.hooks...)
	if client != l.client {
		defer client.Close()
	}
	cfg.Client, cfg.MarketOptions = client, bookform.Options(client, form)
	return sim.Run(ctx, cfg)
}

// link declares -client, -rtt, -jitter and -profile, and the check that
// applies the profile to those of the others not given and sets form,
// rtt and jitter.
func (f *cmdFlags) link(form *markettrace.ClientForm, rtt, jitter *time.Duration, profile *string) {
	client := f.String("client", string(markettrace.LeanClient), "command sequences: lean (pipelined: two round trips per uncontended operation) or book (the book's listings, one command per round trip, and its lock with timeout)")
	f.DurationVar(rtt, "rtt", 0, fmt.Sprintf("add this much to every round trip to Redis, through a TCP proxy in this process (0..%v); the run reports the round trip it measured", maxRTT))
	f.DurationVar(jitter, "jitter", 0, fmt.Sprintf("add to each reply's delay a random part drawn from an exponential distribution of this mean, seeded by -seed, replies kept in order (0..%v; see internal/redis/netdelay)", maxRTT))
	f.StringVar(profile, "profile", "", "a preset of -client, -rtt and -jitter: "+profileHelp()+"; those flags given as well override it")
	f.check(func() error {
		if *profile != "" {
			p, ok := profiles[*profile]
			if !ok {
				return fmt.Errorf("-profile %q: want one of %s", *profile, profileNames())
			}
			if !f.set("client") {
				*client = string(p.client)
			}
			if !f.set("rtt") {
				*rtt = p.rtt
			}
			if !f.set("jitter") {
				*jitter = p.jitter
			}
		}
		var err error
		if *form, err = markettrace.ParseClientForm(*client); err != nil {
			return fmt.Errorf("-client %q: want lean or book", *client)
		}
		if *rtt < 0 || *rtt > maxRTT {
			return fmt.Errorf("-rtt %v must be between 0 and %v", *rtt, maxRTT)
		}
		if *jitter < 0 || *jitter > maxRTT {
			return fmt.Errorf("-jitter %v must be between 0 and %v", *jitter, maxRTT)
		}
		return nil
	})
}
