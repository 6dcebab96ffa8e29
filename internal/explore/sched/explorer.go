package sched

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/redis/go-redis/v9"
)

// NewExplorer returns an explorer of t under model m on the Redis base talks to.
// The target's keys live under a fresh namespace, deleted by Close.
func NewExplorer(ctx context.Context, base *redis.Client, t *Target, m action.Model) (*Explorer, error) {
	return NewControlled(ctx, base, base.Options(), t, m)
}

// NewControlled is New with the scheduler's own connection (Redis: its
// resets, clock ticks, reads of the state, the liveness probe's DUMP and
// RESTORE) made from control rather than from base's options: on a
// server whose clients log in as a confined user, which may not run KEYS
// or RESTORE (redisserver.Confinement), control is its administrative
// user's (redisserver.Server.AdminOptions). The target's code runs as base's user only, the probes' too
// (Probe).
func NewControlled(
	ctx context.Context, base *redis.Client, control *redis.Options, t *Target, m action.Model,
) (*Explorer, error) {
	m, err := m.For(t.Clients)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 5)
	rand.Read(b)
	tc := *t
	tc.ns = "{explore-" + hex.EncodeToString(b) + "}:"
	if tc.Workload.Run == nil && tc.Lock == nil {
		return nil, ErrNoClient
	}
	e := &Explorer{
		target:     &tc,
		model:      m,
		KeyPrefix:  tc.ns,
		base:       base,
		control:    control,
		orig:       t,
		Factor:     plumbing.Dilation,
		stuckAfter: defaultStuckAfter,
	}
	opts, ctl := ownOptions(base.Options()), ownOptions(control)
	e.Redis = redis.NewClient(&ctl)
	probe := opts
	e.Probe = redis.NewClient(&probe)
	for range m.Clients {
		o := opts
		o.PoolSize = 4
		c := redis.NewClient(&o)
		s := &slot{}
		c.AddHook(plumbing.Hook{Gate: s})
		e.clients = append(e.clients, c)
		e.slots = append(e.slots, s)
		e.wall = append(e.wall, &wallWait{})
	}
	if err := e.openNodes(opts, ctl); err != nil {
		e.Close()
		return nil, err
	}
	if check := tc.lock().Check; check != nil {
		if err := check(ctx, e.Redis, tc.ns); err != nil {
			e.Close()
			return nil, err
		}
	}
	if err := e.reset(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close deletes the namespace and closes the clients.
func (e *Explorer) Close() error {
	for _, l := range e.lanes {
		l.Close()
	}
	e.lanes = nil
	pattern := NamespacePattern(e.KeyPrefix)
	err := plumbing.ResetScript.Run(context.Background(), e.Redis, nil, pattern).Err()
	if nerr := e.closeNodes(); err == nil {
		err = nerr
	}
	for _, c := range e.clients {
		c.Close()
	}
	e.Probe.Close()
	e.Redis.Close()
	return err
}

// ownOptions are the options of the explorer's connections made from o:
// RESP2, no retry, nothing pushed, not peeked at before each command
// (plumbing.Unpeeked).
func ownOptions(o *redis.Options) redis.Options {
	opts := *o
	opts.Protocol = 2
	opts.DisableIdentity = true
	opts.MaxRetries = -1
	opts.MaintNotificationsConfig = nil
	opts.PushNotificationProcessor = nil
	return plumbing.Unpeeked(opts)
}

// Target is the explored target.
func (e *Explorer) Target() *Target { return e.target }

// SetStuckAfter sets how long, in real time, a schedule run outside a
// search (stepped by hand) waits with no client moving before it ends
// with ErrStuck; 0 restores the default (10 s). A caller that bounds
// each step itself, by processor time and a wall-clock backstop of its
// own, sets it beyond that backstop, so that its own bounds decide. A
// search uses Options.StuckAfter. Call it before the first step.
func (e *Explorer) SetStuckAfter(d time.Duration) { e.stuckAfter = cmp.Or(d, defaultStuckAfter) }

// Model is the explored model.
func (e *Explorer) Model() action.Model { return e.model }

// Resource describes the state of the resource a target with a workload
// of its own protects (the market's listing and buyers); "" for the
// generic workload, whose resource is the key Prefix()+"counter".
func (e *Explorer) Resource(ctx context.Context) (string, error) {
	if e.target.Workload.Resource == nil {
		return "", nil
	}
	return e.target.Workload.Resource(ctx, e.Redis, e.KeyPrefix)
}

// Prefix is the namespace of the target's keys.
func (e *Explorer) Prefix() string { return e.KeyPrefix }
