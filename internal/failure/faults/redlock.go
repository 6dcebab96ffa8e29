package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/locking"
)

// The Redlock trials, after the scenario of Kleppmann's "How to do
// distributed locking": five servers; servers 4 and 5 still hold the key
// for an earlier client whose lease is about to end, so alice's lock is
// granted by servers 1-3 only (a bare majority); then server 3 loses her
// key (restarted without persistence, or its clock jumps and the key
// expires early); once the earlier lease on 4 and 5 has ended, bob gets
// servers 3-5, a majority, while alice's validity has not run out. Both
// then write to a storage server: alice last, as a paused holder would.
// With fencing the storage refuses her write, whose token is older.
const (
	rlServers = 5
	rlTTL     = 5 * time.Second
	// rlNodeTimeout bounds each node's answer. The default, a hundredth
	// of the lease, is 50 ms: a loaded machine can take longer to answer
	// on loopback, and an acquisition would then fail for want of CPU,
	// not for the fault the cell shows.
	rlNodeTimeout = time.Second
	// rlEarlier is the lease of the earlier client on servers 4 and 5.
	rlEarlier = 300 * time.Millisecond
)

func runRedlock(ctx context.Context, f Fault, v Variant, cfg Config) (Result, error) {
	res := Result{Fault: f, Variant: v}
	var servers []*redisserver.Server
	defer func() {
		for _, s := range servers {
			s.Stop()
		}
	}()
	for range rlServers + 1 { // the last one is the storage
		s, err := startServer(ctx)
		if err != nil {
			return res, err
		}
		servers = append(servers, s)
	}
	clients := make([]redis.UniversalClient, rlServers)
	for i := range rlServers {
		c := redis.NewClient(&redis.Options{Addr: servers[i].Addr(), MaxRetries: -1})
		defer c.Close()
		clients[i] = c
	}
	storage := checkClient(servers[rlServers].Addr())
	defer storage.Close()
	for trial := range cfg.Trials {
		if err := redlockTrial(ctx, f, v, cfg, trial, servers, clients, storage, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

func redlockTrial(ctx context.Context, f Fault, v Variant, cfg Config, trial int,
	servers []*redisserver.Server, clients []redis.UniversalClient, storage *redis.Client, res *Result) error {
	key := fmt.Sprintf("rl:%d:lock", trial)
	resource := fmt.Sprintf("rl:%d:resource", trial)
	seen := resource + ":fence"
	counter := resource + ":counter"
	fenced := v == RedlockFenced
	for _, c := range clients[3:] {
		if err := c.Set(ctx, key, "earlier", rlEarlier).Err(); err != nil {
			return err
		}
	}
	lock := locking.NewRedlockMutex(clients, key, rlTTL, locking.WithNodeTimeout(rlNodeTimeout))
	res.Attempted++
	a, err := lock.TryAcquire(ctx)
	if err != nil {
		return fmt.Errorf("alice's acquisition: %w", err)
	}
	res.Ok++
	// A fencing token from the storage, taken right after the lock:
	// Redlock hands out none of its own.
	fenceA, err := storage.Incr(ctx, counter).Result()
	if err != nil {
		return err
	}

	switch f {
	case RedlockRestart:
		servers[2].Kill()
		if err := servers[2].Restart(ctx); err != nil {
			return err
		}
		// The restarted server answers on a new connection.
		clients[2].(*redis.Client).Close()
		clients[2] = redis.NewClient(&redis.Options{Addr: servers[2].Addr(), MaxRetries: -1})
	case RedlockClockJump:
		// Its clock jumped forward: the key expires now rather than in
		// rlTTL.
		if err := clients[2].PExpire(ctx, key, time.Millisecond).Err(); err != nil {
			return err
		}
	}
	if err := (locking.RealClock{}).Sleep(ctx, rlEarlier+50*time.Millisecond); err != nil {
		return err
	}
	lock = locking.NewRedlockMutex(clients, key, rlTTL, locking.WithNodeTimeout(rlNodeTimeout))
	res.Attempted++
	b, err := lock.TryAcquire(ctx)
	switch {
	case err == nil:
		res.Ok++
	case errors.Is(err, locking.ErrNotAcquired):
		res.Failed++
	default:
		return fmt.Errorf("bob's acquisition: %w", err)
	}
	stale := false
	if b != nil {
		if a.Validity() > 0 {
			res.DoubleHolders++
		}
		fenceB, err := storage.Incr(ctx, counter).Result()
		if err != nil {
			return err
		}
		if err := write(ctx, storage, fenced, resource, seen, "bob", fenceB); err != nil {
			return err
		}
		// Alice, still within her validity, writes after bob.
		err = write(ctx, storage, fenced, resource, seen, "alice", fenceA)
		switch {
		case errors.Is(err, locking.ErrStaleFence):
		case err != nil:
			return err
		default:
			stale = true
			res.StaleWrites++
			res.note("trial %d: alice's write landed after bob's", trial)
		}
	}
	validA := a.Validity().Round(time.Millisecond)
	// Alice's lock is lost when her token is no longer on a majority.
	have := 0
	for _, c := range clients {
		if v, err := c.Get(ctx, key).Result(); err == nil && v == a.Token() {
			have++
		}
	}
	if have < lock.Quorum() {
		res.LockLost++
	}
	a.Release(ctx)
	if b != nil {
		b.Release(ctx)
	}
	res.Trials++
	fmt.Fprintf(cfg.Log, "%s %s trial %d: bob acquired %v while alice valid for %v; stale write %v\n",
		f, v, trial, b != nil, validA, stale)
	return nil
}

// write writes who to the resource, through the fence when fenced
// (locking.FencedWrite); a refused write returns locking.ErrStaleFence.
func write(ctx context.Context, storage *redis.Client, fenced bool, resource, seen, who string, fence int64) error {
	if !fenced {
		return storage.Set(ctx, resource, who, 0).Err()
	}
	return locking.FencedWrite(ctx, storage, seen, fence, func(p redis.Pipeliner) {
		p.Set(ctx, resource, who, 0)
	})
}
