package sched

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/goroutine"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/redis/go-redis/v9"
)

// ErrNoClient is returned for a Target that has no code to run: neither
// a Workload.Run nor a Lock (Code without a client function).
var ErrNoClient = errors.New("explore: the target has no Client function")

// Namespace is the prefix of every key of one exploration. Each schedule
// starts with no key under it, and each worker of a search has one of its
// own, so a target's code must make every key it uses with Key: the
// explorer runs the leases down on the virtual clock, and clears the keys
// between schedules, under the namespace only.
type Namespace string

// Key is name in the namespace. A key named "lock:..." is drawn as a
// lock in a counterexample's timeline.
func (ns Namespace) Key(name string) string { return string(ns) + name }

// Redis is the client's go-redis client. Every command sent through it
// waits for the scheduler, whatever its context (context.Background()
// too): its hook knows the client from the go-redis client. Send from
// the client's own goroutine or one started with Go: a command from a
// goroutine started with the go statement ends the search (ErrOutside).
func (c *Client) Redis() *redis.Client { return c.c.Redis }

// Name is the client's name: "A", "B", "C" or "D".
func (c *Client) Name() string { return c.c.Name }

// Key is name in the exploration's namespace (Namespace.Key).
func (c *Client) Key(name string) string { return c.c.world.Target.ns + name }

// Lease is the lease (TTL) the client's lock should ask for: the model's
// TTL, as the server sees it (dilated: times Dilation).
func (c *Client) Lease() time.Duration { return c.c.world.Dilate(c.m.TTL) }

// Now is the time on the client's clock: the virtual clock, dilated (its
// epoch plus the virtual time times Dilation).
func (c *Client) Now() time.Time { return Clock{c.c}.Now() }

// Sleep waits for d on the client's clock (d/Dilation of virtual time),
// or until ctx ends: the scheduler decides when the clock gets there. A
// real time.Sleep (or a timer, or a channel another client writes to)
// waits on the wall clock, outside the scheduler's view: the leases on
// the server run down in real time meanwhile, and once a client has so
// waited WallAfter the search ends (ErrWallClock).
func (c *Client) Sleep(ctx context.Context, d time.Duration) error {
	return Clock{c.c}.Sleep(ctx, d)
}

// Go runs f in a goroutine of the client that the scheduler waits for
// (a watchdog that renews a lease, say). A goroutine started with the go
// statement instead is outside the scheduler's view.
func (c *Client) Go(f func()) { Clock{c.c}.Go(f) }

// Holding records that the client now believes it holds the lock. Its
// lease (as the server sees it, like Lease) ends lease after the client
// sent its last command (the one that took or renewed the lock); a lease
// of 0 or less never ends. A second call (after a renewal) replaces the
// lease. Mutual exclusion is broken when two clients believe they hold
// the lock and neither's lease has run out.
//
// After Released, a call from any goroutine but the client's own (a
// watchdog whose renewal's reply came late) is ignored until the
// critical section ends: the hold it would renew has ended. A call from
// the client's own goroutine is a hold taken anew.
func (c *Client) Holding(lease time.Duration) {
	w := c.c.world
	me := goroutine.WhoAmI()
	w.mu.Lock()
	defer w.mu.Unlock()
	if c.released && w.gnum(me) != 0 {
		return
	}
	c.released = false
	end := time.Duration(-1)
	if lease > 0 {
		end = c.c.sentAt + w.Undilate(lease)
	}
	c.c.holding = &hold{Write: true, End: func() time.Duration { return end }}
	c.c.endHold = false
	c.c.got++
}

// Released says that the client is about to release the lock: it stops
// believing it holds it when its next command runs (the release's first),
// or when the client code returns. Call it just before the release. A
// renewal that lands after it renews nothing (Holding).
func (c *Client) Released() {
	w := c.c.world
	w.mu.Lock()
	defer w.mu.Unlock()
	c.released = true
	if c.c.holding != nil {
		c.c.endHold = true
	}
}

// Code is a target written in Go, named name ("code" when empty), run by
// clients clients: each runs client once per critical section; setup, if
// set, prepares each schedule's keys, and check, if set, checks them at
// its end (an error breaks Resource). Mutual exclusion is checked, and
// Resource when there is a check.
func Code(
	name string, clients int,
	setup func(ctx context.Context, rdb *redis.Client, ns Namespace) error,
	client func(ctx context.Context, c *Client) error,
	check func(ctx context.Context, rdb *redis.Client, ns Namespace) error,
) *Target {
	if name == "" {
		name = "code"
	}
	t := &Target{Name: name, Clients: clients, Checks: []string{result.MutualExclusion},
		Traits: Traits{declared: true}}
	if check != nil {
		t.Checks = append(t.Checks, result.Resource)
	}
	if setup != nil {
		t.Workload.Prepare = func(ctx context.Context, rdb redis.UniversalClient, ns string) error {
			return setup(ctx, rdb.(*redis.Client), Namespace(ns))
		}
	}
	if client != nil {
		t.Workload.Run = func(ctx context.Context, c *Client) error {
			return runCode(ctx, c, client)
		}
	}
	t.Workload.End = func(
		ctx context.Context, e *Explorer, _ Snapshot,
	) ([]result.Violation, error) {
		return endCode(ctx, e, check)
	}
	return t
}

// runCode is one client of a target written in Go: for each critical
// section, once the scheduler lets it start, the target's Client.
func runCode(
	ctx context.Context, h *Client, client func(ctx context.Context, c *Client) error,
) (err error) {
	defer func() {
		if r := recover(); r != nil {
			buf := make([]byte, 4<<10)
			buf = buf[:runtime.Stack(buf, false)]
			err = fmt.Errorf("panic: %v\n%s", r, buf)
		}
	}()
	c := h.c
	for range h.m.Iterations {
		if err := h.Begin(ctx); err != nil {
			return err
		}
		err := client(ctx, h)
		c.world.mu.Lock()
		if c.endHold {
			c.holding, c.endHold = nil, false
		}
		c.world.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// Begin waits until the scheduler lets the client begin its next critical
// section, and records that it wants the lock: call it at the start of
// each critical section of a workload of the target's own (Workload.Run).
func (c *Client) Begin(ctx context.Context) error {
	if err := (Clock{c.c}).AwaitStart(ctx); err != nil {
		return err
	}
	w := c.c.world
	w.mu.Lock()
	c.c.wanted = true
	c.released = false
	w.mu.Unlock()
	return nil
}

// Completed records that a critical section's write was applied.
func (c *Client) Completed() {
	w := c.c.world
	w.mu.Lock()
	c.c.completed++
	w.mu.Unlock()
}

// Index is the client's index: 0 for A, 1 for B...
func (c *Client) Index() int { return c.c.Index }

// Model is the bounds of the exploration the client runs in.
func (c *Client) Model() action.Model { return c.m }

// Clock is the client's clock.
func (c *Client) Clock() Clock { return Clock{c.c} }

// Dilate is the lease the server sees for virtual duration v (world.Dilate).
func (c *Client) Dilate(v time.Duration) time.Duration { return c.c.world.Dilate(v) }

// Prefix is the namespace of the target's keys.
func (c *Client) Prefix() string { return c.c.world.Target.ns }

// Elapsed is the virtual time since the epoch (Clock.Elapsed).
func (c *Client) Elapsed() time.Duration { return Clock{c.c}.Elapsed() }

// Undilate is the virtual duration of d, a duration the server or the
// client's clock sees.
func (c *Client) Undilate(d time.Duration) time.Duration { return c.c.world.Undilate(d) }

// At is what the client's clock reads at virtual time v.
func (c *Client) At(v time.Duration) time.Time { return c.c.world.At(v) }

// Since is the virtual time of t, a time the client's clock read (or a
// lease's end computed from one).
func (c *Client) Since(t time.Time) time.Duration { return c.c.world.Since(t) }

// Short is text with the namespace left out (Target.Short).
func (c *Client) Short(s string) string { return c.c.world.Target.Short(s) }

// NewID is the next value of kind (IDToken, IDCall) the explorer makes
// for the client, shaped as a UUID: the same in every run of the
// schedule, and unlike any other client's or kind's.
func (c *Client) NewID(kind string) string { return c.c.world.NewID(c.c, kind) }

// Nodes is the client's go-redis clients of the lock's nodes, in order
// (Lock.Nodes); every command sent through them waits for the scheduler.
func (c *Client) Nodes() []*redis.Client { return c.c.world.Target.nodes.Clients[c.c.Index] }

// Control is the scheduler's own connection, which no schedule holds: the
// client's code may read the server through it while nothing else moves
// (a recipe reading its lock's key around an op). What it sends is no
// step of the schedule.
func (c *Client) Control() *redis.Client { return c.c.world.Control }

// SettleLeases makes every lease on the server what the virtual clock
// says it is: a key a transaction WATCHes keeps its lease on the server
// while the clock advances, and is shortened by the time it is owed here.
// Call it before reading a lease through Control.
func (c *Client) SettleLeases(ctx context.Context) error { return c.c.world.SettleLeases(ctx) }

// Snapshot is a copy of the runtime's record of the schedule as it stands.
func (c *Client) Snapshot() Snapshot { return c.c.world.Snapshot() }

// Expiries is how many times key's lease has run out in the schedule.
func (c *Client) Expiries(key string) int { return c.c.world.Expiries(key) }

// KeyLog is a copy of what the schedule has logged on key, in order: each
// write (and WATCH) of a client, each running out of its lease.
func (c *Client) KeyLog(key string) []string { return c.c.world.KeyLog(key) }

// Disowned records an ownership violation at the step being taken: a
// reply to the client claimed a hold that had ended, for the reason why.
func (c *Client) Disowned(why string) { c.c.world.Disowned(why) }

// CountOp counts a call of a recipe's op by the client, with its reply,
// and whether it succeeded (Result.Ops, Result.Vacuous).
func (c *Client) CountOp(op, reply string, ok bool) { c.c.world.CountOp(op, reply, ok) }

// endCode checks the end of a schedule of a target written in Go: its
// check, if any, on the scheduler's own connection.
func endCode(
	ctx context.Context, e *Explorer,
	check func(ctx context.Context, rdb *redis.Client, ns Namespace) error,
) ([]result.Violation, error) {
	if check == nil {
		return nil, nil
	}
	err := check(ctx, e.Redis, Namespace(e.KeyPrefix))
	if err == nil {
		return nil, nil
	}
	if ctx.Err() != nil {
		return nil, err
	}
	v := result.Violation{Property: result.Resource, Message: e.target.Short(err.Error())}
	return []result.Violation{v}, nil
}
